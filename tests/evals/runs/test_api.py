from __future__ import annotations

import pytest

from evalsite.accounts.services import api_token_create
from evalsite.evals.models import Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.evals.conftest import judge_control
from tests.factories import ProjectFactory, ScorerConfigFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client):
    def _as(user):
        _, raw = api_token_create(user=user)
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
        return client

    return _as


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
