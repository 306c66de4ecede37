"""One word, one id. `run_scorer_id` (and the pages' `run_scorer`)
is a RunScorer id, a run's own copy of a scorer; `scorer_id` is only ever a scorer
config's id (GET /api/runs/{id} scorers[].scorer_id, POST /runs scorer_ids).

The ids are made to differ (configs made ahead) so no assertion passes by chance."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from evalsite.review.models import ReviewQueue
from tests.conftest import login
from tests.factories import ReviewQueueFactory, ScorerConfigFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    for _ in range(7):  # configs ahead, so config ids and run scorer ids part
        ScorerConfigFactory(project=project)
    run = make_run(project, kinds=["faithfulness", "hallucination"], n_items=3)
    for rs in run.run_scorers.all():
        assert rs.pk != rs.scorer_id
    return run


def test_run_detail_names_config_ids_scorer_id_and_run_scorer_ids_apart(
    client, viewer, run
):
    data = login(client, viewer).get(f"/api/runs/{run.pk}").json()
    by_id = {s["id"]: s["scorer_id"] for s in data["scorers"]}
    assert by_id == dict(run.run_scorers.values_list("pk", "scorer_id"))
    for agg in data["aggregates"]:
        assert "scorer_id" not in agg
        assert agg["scorer_config_id"] == by_id[agg["run_scorer_id"]]


def test_results_api_returns_and_filters_by_run_scorer_id(client, viewer, run):
    hall = run.run_scorers.get(kind="hallucination")
    login(client, viewer)
    data = client.get(f"/api/runs/{run.pk}/results", {"run_scorer_id": hall.pk}).json()
    assert data["count"] == 3
    assert {r["run_scorer_id"] for r in data["items"]} == {hall.pk}
    assert all("scorer_id" not in r for r in data["items"])
    one = client.get(f"/api/results/{data['items'][0]['id']}").json()
    assert one["run_scorer_id"] == hall.pk and "scorer_id" not in one
    assert one["scorer_config_id"] == hall.scorer_id


@pytest.mark.parametrize(
    "path", ["/api/runs/{run}/results", "/api/runs/{run}/export.csv"]
)
def test_the_old_scorer_id_filter_is_refused_naming_run_scorer_id(
    client, viewer, run, path
):
    """Before the rename ?scorer_id= was a run scorer id: it is refused, never read as
    either id (an unfiltered answer would look like a filtered one)."""
    hall = run.run_scorers.get(kind="hallucination")
    response = login(client, viewer).get(
        path.format(run=run.pk), {"scorer_id": hall.pk}
    )
    assert response.status_code in (400, 422)
    assert "run_scorer_id" in response.content.decode()


def test_explorer_filters_by_run_scorer_and_reads_old_scorer_bookmarks(
    client, viewer, run
):
    hall = run.run_scorers.get(kind="hallucination")
    url = reverse("review:explorer", args=[run.project_id, run.pk])
    login(client, viewer)
    for params in ({"run_scorer": hall.pk}, {"scorer": hall.pk}):
        response = client.get(url, params)
        rows = [r["result"] for r in response.context["rows"]]
        assert len(rows) == 3 and {r.run_scorer_id for r in rows} == {hall.pk}
        html = response.content.decode()
        assert f'<option value="{hall.pk}" selected>' in html
        assert 'name="run_scorer"' in html and 'name="scorer"' not in html


def test_compare_api_names_run_scorer_ids(client, viewer, project, run):
    other = make_run(
        project, kinds=["faithfulness", "hallucination"], n_items=3, dataset=run.dataset
    )
    hall_a = run.run_scorers.get(kind="hallucination")
    hall_b = other.run_scorers.get(kind="hallucination")
    data = (
        login(client, viewer)
        .get(f"/api/runs/{run.pk}/compare/{other.pk}", {"run_scorer_id": hall_a.pk})
        .json()
    )
    assert data["run_scorer_id"] == hall_a.pk
    pair = next(p for p in data["pairs"] if p["run_scorer_id"] == hall_a.pk)
    assert pair["b_run_scorer_id"] == hall_b.pk and "scorer_id" not in pair


def test_rescore_api_reads_scorer_id_as_the_config_only(client, reviewer, run):
    """A scorer_id that is one of the run's RunScorer ids but not a config the run
    used is refused: it used to be taken as the run scorer."""
    faith = run.run_scorers.get(kind="faithfulness")
    hall = run.run_scorers.get(kind="hallucination")
    assert faith.pk not in (faith.scorer_id, hall.scorer_id)
    login(client, reviewer)
    url = f"/api/runs/{run.pk}/rescore"
    body = {"options": {"threshold": 0.7}}
    wrong = client.post(
        url, {**body, "scorer_id": faith.pk}, content_type="application/json"
    )
    assert wrong.status_code in (400, 422) and "scorer_id" in wrong.content.decode()
    by_config = client.post(
        url, {**body, "scorer_id": faith.scorer_id}, content_type="application/json"
    )
    assert by_config.status_code == 200
    assert by_config.json()["run_scorer_id"] == faith.pk
    by_run_scorer = client.post(
        url, {**body, "run_scorer_id": hall.pk}, content_type="application/json"
    )
    assert by_run_scorer.json()["run_scorer_id"] == hall.pk


def test_a_queue_stores_and_shows_its_run_scorer_filter(client, reviewer, run):
    hall = run.run_scorers.get(kind="hallucination")
    login(client, reviewer)
    response = client.post(
        f"/api/runs/{run.pk}/queues",
        {"filters": {"run_scorer_id": hall.pk}},
        content_type="application/json",
    )
    assert response.status_code == 201
    assert response.json()["filters"] == {"run_scorer": hall.pk}
    old = client.post(
        f"/api/runs/{run.pk}/queues",
        {"filters": {"scorer_id": hall.pk}},
        content_type="application/json",
    )
    assert old.status_code == 422 and "run_scorer_id" in old.content.decode()


def test_migration_renames_stored_queue_filters(run):
    migration = importlib.import_module(
        "evalsite.review.migrations.0014_queue_filters_run_scorer"
    )
    queue = ReviewQueueFactory(run=run, filters={"scorer": 5, "final_passed": False})
    untouched = ReviewQueueFactory(run=run, filters={"mine": True})
    migration.forwards(django_apps, None)
    queue.refresh_from_db()
    untouched.refresh_from_db()
    assert queue.filters == {"run_scorer": 5, "final_passed": False}
    assert untouched.filters == {"mine": True}
    migration.backwards(django_apps, None)
    assert ReviewQueue.objects.get(pk=queue.pk).filters == {
        "scorer": 5,
        "final_passed": False,
    }
