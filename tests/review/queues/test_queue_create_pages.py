"""A queue can be created from the run page, the explorer's filters and the matrix's,
with the same rule as before: reviewers and owners may, viewers may not, and another
project's run is a 404."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from evalsite.review.models import QueueEntry, ReviewQueue
from tests.conftest import login
from tests.factories import ProjectFactory
from tests.review.explorer.test_keyset import _bulk_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return _bulk_run(project, n_items=8, n_scorers=2)


def _run_page(run):
    return reverse("evals:run_detail", args=[run.project_id, run.pk])


def _create(run):
    return reverse("review:queue_create", args=[run.project_id, run.pk])


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_run_page_offers_a_queue_of_the_whole_run(client, run, who, request):
    login(client, request.getfixturevalue(who))
    body = client.get(_run_page(run)).content.decode()
    assert 'id="run-queue-create"' in body
    assert "Create queue from these 16 results" in body
    assert 'name="back" value="run"' in body
    response = client.post(_create(run), {"source": "filters", "back": "run"})
    queue = ReviewQueue.objects.get(run=run)
    assert response.url == reverse("review:queue", args=[run.project_id, queue.pk])
    assert (
        QueueEntry.objects.filter(queue=queue).count()
        == Result.objects.filter(run=run).count()
    )


def test_run_page_failing_queue_error_goes_back_to_the_run_page(client, reviewer, run):
    Result.objects.filter(run=run).update(final_passed=True)
    login(client, reviewer)
    response = client.post(_create(run), {"source": "failing", "back": "run"})
    assert response.status_code == 302 and response.url == _run_page(run)
    assert not ReviewQueue.objects.filter(run=run).exists()


def test_viewer_gets_no_queue_control_and_cannot_post(client, viewer, run):
    login(client, viewer)
    assert 'id="queue-create-form"' not in client.get(_run_page(run)).content.decode()
    explorer = reverse("review:explorer", args=[run.project_id, run.pk])
    assert 'id="queue-create-form"' not in client.get(explorer).content.decode()
    response = client.post(_create(run), {"source": "filters", "back": "matrix"})
    assert response.status_code == 403
    assert not ReviewQueue.objects.exists()


def test_another_projects_run_is_404_from_every_page(client, reviewer, run):
    other = _bulk_run(ProjectFactory(), n_items=2, n_scorers=1)
    login(client, reviewer)
    for project_id in (run.project_id, other.project_id):
        url = reverse("review:queue_create", args=[project_id, other.pk])
        for back in ("run", "matrix", "explorer"):
            response = client.post(url, {"source": "filters", "back": back})
            assert response.status_code == 404
    assert not ReviewQueue.objects.exists()


def test_explorer_offers_the_queue_control_next_to_its_filters(client, reviewer, run):
    login(client, reviewer)
    explorer = reverse("review:explorer", args=[run.project_id, run.pk])
    body = client.get(f"{explorer}?judge=pass").content.decode()
    count = Result.objects.filter(run=run, judge_passed=True).count()
    assert f"Create queue from these {count} results" in body
    # Near the filters: before the results table, not after it.
    assert body.index('id="queue-create-form"') < body.index('id="results-table"')
    assert '<input type="hidden" name="judge" value="pass">' in body


def test_unknown_back_page_falls_back_to_the_explorer(client, reviewer, run):
    login(client, reviewer)
    response = client.post(
        _create(run), {"source": "filters", "q": "nothing at all", "back": "//evil"}
    )
    explorer = reverse("review:explorer", args=[run.project_id, run.pk])
    assert response.url == f"{explorer}?q=nothing+at+all"
