"""Who may do what beyond reviewing: start runs on paid judges (and retry them), save a
rescore, see the run form. Each rule through the page and the API, with forged posts."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalsite.evals.judges.services import judge_create_offline
from evalsite.evals.models import Result, Run, ScorerConfig
from tests.conftest import bearer, login
from tests.exports.builders import QA_DATASET, make_run_with_score
from tests.factories import (
    DatasetFactory,
    JudgeConnectionFactory,
    ScorerConfigFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(project, owner, reviewer, viewer):
    dataset = DatasetFactory(project=project, **QA_DATASET)
    paid = ScorerConfigFactory(
        project=project,
        judge=JudgeConnectionFactory(project=project, name="GPT-4o"),
        name="Paid",
    )
    free = ScorerConfigFactory(
        project=project, judge=judge_create_offline(project), name="Free"
    )
    local = ScorerConfigFactory(
        project=project, name="Local", kind="content_similarity"
    )
    return {"dataset": dataset, "paid": paid, "free": free, "local": local}


def _allow(project, **flags):
    for name, value in flags.items():
        setattr(project, name, value)
    project.save(update_fields=list(flags))


def _start_page(client, project, dataset, scorers, **extra):
    return client.post(
        reverse("evals:run_create", args=[project.pk]),
        {"dataset": dataset.pk, "scorers": [s.pk for s in scorers]},
        **extra,
    )


def _start_api(client, user, project, dataset, scorers):
    return client.post(
        f"/api/projects/{project.pk}/runs",
        json.dumps({"dataset_id": dataset.pk, "scorer_ids": [s.pk for s in scorers]}),
        content_type="application/json",
        **bearer(user),
    )


# ------------------------------------------------------------------ run form


def test_viewers_get_no_run_form_and_their_forged_posts_start_nothing(
    client, project, viewer, setup
):
    login(client, viewer)
    url = reverse("evals:run_create", args=[project.pk])
    assert client.get(url).status_code == 403
    query = f"?dataset={setup['dataset'].pk}&scorers={setup['free'].pk}"
    assert client.get(url + query, HTTP_HX_REQUEST="true").status_code == 403
    free = [setup["free"]]
    assert _start_page(client, project, setup["dataset"], free).status_code == 403
    assert (
        _start_page(
            client, project, setup["dataset"], free, HTTP_HX_REQUEST="true"
        ).status_code
        == 403
    )
    assert _start_api(client, viewer, project, setup["dataset"], free).status_code == (
        403
    )
    runs_page = client.get(reverse("evals:runs", args=[project.pk])).content.decode()
    assert 'id="new-run"' not in runs_page
    overview = client.get(reverse("accounts:project", args=[project.pk]))
    assert "No runs yet" in overview.content.decode()
    assert (
        reverse("evals:run_create", args=[project.pk]) not in overview.content.decode()
    )
    assert not Run.objects.exists()


@pytest.mark.parametrize("how", ["page", "api"])
@pytest.mark.parametrize("scorers", [["paid"], ["free", "paid"]])
def test_reviewers_cannot_start_a_run_on_a_paid_judge(
    client, project, reviewer, setup, how, scorers
):
    chosen = [setup[name] for name in scorers]
    if how == "page":
        login(client, reviewer)
        response = _start_page(client, project, setup["dataset"], chosen)
        assert response.status_code == 403
        assert "paid judge (GPT-4o)" in response.content.decode()
    else:
        response = _start_api(client, reviewer, project, setup["dataset"], chosen)
        assert response.status_code == 403
        body = response.json()
        assert set(body) == {"detail", "errors"}
        assert "paid judge (GPT-4o)" in body["detail"]
        assert "project settings" in body["detail"]
    assert not Run.objects.exists()


@pytest.mark.parametrize("how", ["page", "api"])
def test_reviewers_start_runs_on_the_offline_judge_and_local_scorers(
    client, project, reviewer, setup, how
):
    chosen = [setup["free"], setup["local"]]
    if how == "page":
        login(client, reviewer)
        response = _start_page(client, project, setup["dataset"], chosen)
        assert response.status_code == 302
    else:
        response = _start_api(client, reviewer, project, setup["dataset"], chosen)
        assert response.status_code == 202, response.content
    assert Run.objects.count() == 1


@pytest.mark.parametrize("how", ["page", "api"])
def test_owners_start_paid_runs_and_may_let_reviewers(
    client, project, owner, reviewer, setup, how
):
    paid = [setup["paid"]]
    if how == "page":
        login(client, owner)
        assert _start_page(client, project, setup["dataset"], paid).status_code == 302
        _allow(project, reviewers_can_start_runs=True)
        login(client, reviewer)
        assert _start_page(client, project, setup["dataset"], paid).status_code == 302
    else:
        response = _start_api(client, owner, project, setup["dataset"], paid)
        assert response.status_code == 202
        _allow(project, reviewers_can_start_runs=True)
        response = _start_api(client, reviewer, project, setup["dataset"], paid)
        assert response.status_code == 202
    assert Run.objects.count() == 2


def test_the_run_form_marks_paid_scorers_owner_only_for_reviewers(
    client, project, owner, reviewer, setup
):
    url = reverse("evals:run_create", args=[project.pk])
    body = login(client, reviewer).get(url).content.decode()

    def box(scorer):
        mark = f'name="scorers" value="{scorer.pk}"'
        return next(line for line in body.splitlines() if mark in line)

    assert " disabled" in box(setup["paid"])
    assert " disabled" not in box(setup["free"])
    assert "only owners can start it here" in body
    body = login(client, owner).get(url).content.decode()
    assert "only owners can start it here" not in body


@pytest.fixture
def failed_paid_run(project, setup):
    run = make_run_with_score(project, setup["dataset"], [setup["paid"]])
    Result.objects.filter(run=run).update(status=Result.Status.ERROR, error="boom")
    return run


def test_reviewers_cannot_retry_a_paid_run_through_page_or_api(
    client, project, reviewer, failed_paid_run
):
    run = failed_paid_run
    login(client, reviewer)
    detail = client.get(reverse("evals:run_detail", args=[project.pk, run.pk]))
    assert 'id="retry-failed"' not in detail.content.decode()
    url = reverse("evals:run_retry_failed", args=[project.pk, run.pk])
    assert client.post(url).status_code == 403
    assert client.post(url, HTTP_HX_REQUEST="true").status_code == 403
    api = client.post(f"/api/runs/{run.pk}/retry-failed", **bearer(reviewer))
    assert api.status_code == 403 and "paid judge" in api.json()["detail"]
    assert not Result.objects.filter(run=run).exclude(status="error").exists()


def test_owners_retry_paid_runs_and_reviewers_once_allowed(
    client, project, owner, reviewer, failed_paid_run
):
    run = failed_paid_run
    login(client, owner)
    detail = client.get(reverse("evals:run_detail", args=[project.pk, run.pk]))
    assert 'id="retry-failed"' in detail.content.decode()
    _allow(project, reviewers_can_start_runs=True)
    api = client.post(f"/api/runs/{run.pk}/retry-failed", **bearer(reviewer))
    assert api.status_code == 200, api.content
    assert api.json()["retried"] == Result.objects.filter(run=run).count()


# ------------------------------------------------------------------ rescore


@pytest.fixture
def finished_run(project, setup):
    return make_run_with_score(project, setup["dataset"], [setup["free"]])


def _versions() -> int:
    return ScorerConfig.objects.count()


def _rescore_api(client, user, run, *, save):
    return client.post(
        f"/api/runs/{run.pk}/rescore",
        json.dumps(
            {
                "run_scorer_id": run.run_scorers.get().pk,
                "options": {"scale": 2},
                "save": save,
            }
        ),
        content_type="application/json",
        **bearer(user),
    )


def _rescore_form(run, **extra):
    return {
        "scorer": run.run_scorers.get().pk,
        "scale": "2",
        "threshold": "0.5",
        "action": "save",
        **extra,
    }


def test_reviewers_preview_but_cannot_save_a_rescore(
    client, project, reviewer, finished_run
):
    run = finished_run
    before = _versions()
    finals = list(Result.objects.values_list("final_score", flat=True))
    assert _rescore_api(client, reviewer, run, save=False).status_code == 200
    refused = _rescore_api(client, reviewer, run, save=True)
    assert refused.status_code == 403
    assert "Only project owners can save a rescore" in refused.json()["detail"]

    login(client, reviewer)
    url = reverse("review:rescore", args=[project.pk, run.pk])
    page = client.get(url).content.decode()
    assert 'id="rescore-save"' not in page and "Only owners can save" in page
    for extra in ({}, {"HTTP_HX_REQUEST": "true"}):
        forged = client.post(url, _rescore_form(run, confirm="yes"), **extra)
        assert forged.status_code == 403
    assert _versions() == before
    assert list(Result.objects.values_list("final_score", flat=True)) == finals


def test_reviewers_save_a_rescore_once_the_owner_allows_it(
    client, project, reviewer, finished_run
):
    _allow(project, reviewers_can_save_rescore=True)
    before = _versions()
    response = _rescore_api(client, reviewer, finished_run, save=True)
    assert response.status_code == 200 and response.json()["saved"] is True
    assert _versions() == before + 1


def test_saving_a_rescore_in_the_page_asks_first(client, project, owner, finished_run):
    run = finished_run
    login(client, owner)
    url = reverse("review:rescore", args=[project.pk, run.pk])
    page = client.get(url).content.decode()
    button = page.split('id="rescore-save"')[1].split(">")[0]
    assert "hx-confirm=" in button and "confirm&quot;: &quot;yes" not in button
    assert """hx-vals='{"confirm": "yes"}'""" in page

    before = _versions()
    finals = list(Result.objects.values_list("final_score", flat=True))
    # Without JS: the save button previews and asks; nothing is written.
    asked = client.post(url, _rescore_form(run))
    assert asked.status_code == 200
    html = asked.content.decode()
    assert 'id="rescore-confirm"' in html and "Preview (nothing saved)" in html
    assert _versions() == before
    assert list(Result.objects.values_list("final_score", flat=True)) == finals
    confirm_form = html.split('id="rescore-confirm"')[1].split("</form>")[0]
    assert 'name="confirm" value="yes"' in confirm_form
    assert 'name="scale" value="2"' in confirm_form

    # The confirmation posts it again with confirm=yes: saved.
    saved = client.post(url, _rescore_form(run, confirm="yes"))
    assert saved.status_code == 302
    assert _versions() == before + 1
    assert list(Result.objects.values_list("final_score", flat=True)) != finals
