"""Judge connections through the API."""

from __future__ import annotations

import pytest

from evalsite.accounts.services import api_token_create
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeConnection
from tests.evals.conftest import judge_control

pytestmark = pytest.mark.django_db
SECRET = "sk-live-DO-NOT-LEAK-4242"


@pytest.fixture
def api(client):
    def _as(user):
        _, raw = api_token_create(user=user)
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
        return client

    return _as


def _judge_body(**extra):
    return {
        "name": "GPT",
        "base_url": "https://api.example.com/v1",
        "model": "gpt-4o-mini",
        "max_concurrency": 4,
        "rpm": 120,
        **extra,
    }


def test_api_judge_create_never_returns_the_key(api, project, owner):
    client = api(owner)
    response = client.post(
        f"/api/projects/{project.pk}/judges",
        _judge_body(api_key=SECRET),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["has_api_key"] is True
    assert data["rpm"] == data["requests_per_minute"] == 120
    judge = JudgeConnection.objects.get(pk=data["id"])
    for url in (
        f"/api/projects/{project.pk}/judges",
        f"/api/judges/{judge.pk}",
    ):
        body = client.get(url).content.decode()
        assert SECRET not in body
        assert judge.api_key_encrypted not in body
        assert "api_key_encrypted" not in body
    patched = client.patch(
        f"/api/judges/{judge.pk}",
        {"model": "gpt-4o", "api_key": "sk-other-999"},
        content_type="application/json",
    )
    assert patched.status_code == 200
    assert "sk-other-999" not in patched.content.decode()
    assert (
        judge_services.judge_api_key(judge=JudgeConnection.objects.get(pk=judge.pk))
        == "sk-other-999"
    )


def test_api_judge_create_names_the_bad_field(api, project, owner):
    response = api(owner).post(
        f"/api/projects/{project.pk}/judges",
        _judge_body(base_url="nope"),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "base_url"


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", "GPT\x00"),
        ("model", "gpt\x00"),
        ("base_url", "https://api.example.com/v1\x00"),
        ("base_url", "https://api.example.com/" + "v" * 600),
    ],
)
def test_api_judge_create_refuses_text_the_database_cannot_store(
    api, project, owner, field, value
):
    response = api(owner).post(
        f"/api/projects/{project.pk}/judges",
        _judge_body(**{field: value}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert not JudgeConnection.objects.filter(
        project=project, model__startswith="gpt"
    ).exists()


def test_api_judges_are_owner_only_for_writes(api, project, reviewer, viewer, judge):
    response = api(reviewer).post(
        f"/api/projects/{project.pk}/judges",
        _judge_body(),
        content_type="application/json",
    )
    assert response.status_code == 403
    assert api(viewer).get(f"/api/judges/{judge.pk}").status_code == 200
    assert api(viewer).post(f"/api/judges/{judge.pk}/test").status_code == 403


def test_api_judges_are_404_for_outsiders(api, project, outsider, judge):
    client = api(outsider)
    assert client.get(f"/api/projects/{project.pk}/judges").status_code == 404
    assert client.get(f"/api/judges/{judge.pk}").status_code == 404
    assert (
        client.patch(
            f"/api/judges/{judge.pk}", {"model": "x"}, content_type="application/json"
        ).status_code
        == 404
    )


def test_api_judge_wrong_method_is_405(api, owner, judge):
    assert api(owner).delete(f"/api/judges/{judge.pk}").status_code == 405


def test_api_judge_test_connection(api, owner, judge, offline_judge):
    client = api(owner)
    ok = client.post(f"/api/judges/{judge.pk}/test").json()
    assert ok["ok"] is True and ok["latency_ms"] > 0
    judge_control(offline_judge, script=["400"])
    failed = client.post(f"/api/judges/{judge.pk}/test").json()
    assert failed["ok"] is False and "HTTP 400" in failed["message"]


def test_api_lists_the_offline_judge_with_its_label(api, project, viewer, judge):
    data = api(viewer).get(f"/api/projects/{project.pk}/judges").json()
    assert data["items"][0]["label"] == "offline heuristic judge"
