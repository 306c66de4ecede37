from __future__ import annotations

import pytest

from evalsite.accounts.services import api_token_create
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeConnection, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.evals.conftest import judge_control
from tests.factories import ProjectFactory, ScorerConfigFactory

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


# --------------------------------------------------------------------------- judges


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


def test_api_scorer_and_run_refuse_nul_in_names_and_options(
    api, project, owner, judge, dataset
):
    client = api(owner)
    bad_scorers = [
        {"name": "F\x00", "kind": "faithfulness", "judge_id": judge.pk},
        {
            "name": "Rubric",
            "kind": "custom_rubric",
            "judge_id": judge.pk,
            "options": {"rubric_prompt": "Is {{output}} polite?\x00"},
        },
    ]
    for body in bad_scorers:
        response = client.post(
            f"/api/projects/{project.pk}/scorers", body, content_type="application/json"
        )
        assert response.status_code == 400, response.content
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="Sim", kind="content_similarity"
    )
    response = client.post(
        f"/api/projects/{project.pk}/runs",
        {"dataset_id": dataset.pk, "scorer_ids": [scorer.pk], "name": "nightly\x00"},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert not Run.objects.filter(project=project).exists()


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


# --------------------------------------------------------------------------- scorers


def test_api_scorer_create_validates_options_with_the_field_named(
    api, project, owner, judge
):
    response = api(owner).post(
        f"/api/projects/{project.pk}/scorers",
        {
            "name": "CR",
            "kind": "context_relevance",
            "judge_id": judge.pk,
            "options": {"penalties": {"unused_high_relevance": 2}},
        },
        content_type="application/json",
    )
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["field"] == "options.penalties.unused_high_relevance"
    assert "unused_high_relevance" in error["message"]


def test_api_scorer_create_and_patch_threshold(api, project, owner, judge):
    client = api(owner)
    created = client.post(
        f"/api/projects/{project.pk}/scorers",
        {"name": "F", "kind": "faithfulness", "judge_id": judge.pk, "threshold": 0.8},
        content_type="application/json",
    )
    assert created.status_code == 201
    data = created.json()
    assert data["threshold"] == 0.8 and data["options"]["scale"] == 1
    patched = client.patch(
        f"/api/scorers/{data['id']}",
        {"threshold": 0.6},
        content_type="application/json",
    ).json()
    assert patched["threshold"] == 0.6 and patched["id"] == data["id"]


def test_api_scorer_needs_a_judge_of_this_project(api, project, owner, outsider):
    foreign = (
        JudgeConnection.objects.get(project=outsider.memberships.get().project)
        if (
            JudgeConnection.objects.filter(
                project=outsider.memberships.get().project
            ).exists()
        )
        else judge_services.judge_create_offline(outsider.memberships.get().project)
    )
    response = api(owner).post(
        f"/api/projects/{project.pk}/scorers",
        {"name": "F", "kind": "faithfulness", "judge_id": foreign.pk},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "judge_id"


def test_api_scorer_rejects_unknown_fields(api, project, owner):
    response = api(owner).post(
        f"/api/projects/{project.pk}/scorers",
        {"name": "S", "kind": "content_similarity", "colour": "red"},
        content_type="application/json",
    )
    assert response.status_code == 422


def test_api_scorers_viewer_reads_but_cannot_write(api, project, viewer, scorers):
    client = api(viewer)
    assert client.get(f"/api/projects/{project.pk}/scorers").json()["count"] == 2
    assert (
        client.patch(
            f"/api/scorers/{scorers[0].pk}",
            {"threshold": 0.1},
            content_type="application/json",
        ).status_code
        == 403
    )


# --------------------------------------------------------------------------- runs


def test_api_run_start_and_detail(
    api, project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    client = api(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/projects/{project.pk}/runs",
            {"dataset_id": dataset.pk, "scorer_ids": [s.pk for s in scorers]},
            content_type="application/json",
        )
    assert response.status_code == 202
    started = response.json()
    assert started["status"] == "queued" and started["total"] == 6
    detail = client.get(started["url"]).json()
    assert detail["status"] == "done"
    assert detail["progress"]["total"] == 6
    assert detail["progress"]["done"] == 6 and detail["progress"]["errors"] == 0
    assert [s["kind"] for s in detail["scorers"]] == [
        "faithfulness",
        "content_similarity",
    ]
    assert len(detail["aggregates"]) == 2
    agg = detail["aggregates"][0]
    for key in (
        "run_scorer_id",
        "judge_mean",
        "final_mean",
        "judge_pass_rate",
        "final_pass_rate",
        "reviewed",
        "overridden",
        "agreement",
    ):
        assert key in agg
    listed = client.get(f"/api/projects/{project.pk}/runs").json()
    assert listed["items"][0]["id"] == started["id"]


def test_api_run_start_refuses_foreign_scorers(api, project, owner, dataset):
    foreign = ScorerConfigFactory(
        project=ProjectFactory(name="Other"),
        name="X",
        kind="content_similarity",
        options={},
    )
    response = api(owner).post(
        f"/api/projects/{project.pk}/runs",
        {"dataset_id": dataset.pk, "scorer_ids": [foreign.pk]},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "scorer_ids"
    assert not Run.objects.exists()


def test_api_runs_viewer_and_outsider(
    api, project, owner, viewer, outsider, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    assert api(viewer).get(f"/api/runs/{run.pk}").status_code == 200
    assert api(viewer).post(f"/api/runs/{run.pk}/cancel").status_code == 403
    assert (
        api(viewer)
        .post(
            f"/api/projects/{project.pk}/runs",
            {"dataset_id": dataset.pk, "scorer_ids": [scorers[0].pk]},
            content_type="application/json",
        )
        .status_code
        == 403
    )
    assert api(outsider).get(f"/api/runs/{run.pk}").status_code == 404
    assert api(outsider).post(f"/api/runs/{run.pk}/cancel").status_code == 404
    assert api(owner).get(f"/api/runs/{run.pk}/cancel").status_code == 405


def test_api_run_cancel_and_retry_failed(
    api,
    project,
    owner,
    dataset,
    scorers,
    offline_judge,
    django_capture_on_commit_callbacks,
):
    client = api(owner)
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    cancelled = client.post(f"/api/runs/{run.pk}/cancel").json()
    assert (
        cancelled["status"] == "cancelled" and cancelled["progress"]["cancelled"] == 6
    )
    assert client.post(f"/api/runs/{run.pk}/cancel").status_code == 409

    judge_control(offline_judge, script=["400"])
    with django_capture_on_commit_callbacks(execute=True):
        run2 = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    detail = client.get(f"/api/runs/{run2.pk}").json()
    assert detail["status"] == "done_with_errors"
    assert detail["progress"]["errors"] == 1
    assert "HTTP 400" in detail["errors_by_message"][0]["message"]
    with django_capture_on_commit_callbacks(execute=True):
        retried = client.post(f"/api/runs/{run2.pk}/retry-failed")
    assert retried.json()["retried"] == 1
    assert client.get(f"/api/runs/{run2.pk}").json()["status"] == "done"
    assert client.post(f"/api/runs/{run2.pk}/retry-failed").status_code == 400


def test_api_requires_authentication(client, project):
    assert client.get(f"/api/projects/{project.pk}/judges").status_code == 401
