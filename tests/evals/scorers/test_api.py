"""Scorers through the API."""

from __future__ import annotations

import pytest

from evalsite.accounts.services import api_token_create
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeConnection

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client):
    def _as(user):
        _, raw = api_token_create(user=user)
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
        return client

    return _as


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
