"""An all-matching accept or assign over more results than a request should handle
goes to a worker (here eager Celery, after the request's commit), then says so in the
run's audit log."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result
from evalsite.review.services import bulk
from tests.conftest import bearer, login
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(
        project,
        n_items=6,
        analyses={"faithfulness": [judged_claims("yes"), judged_claims("no")] * 3},
    )


@pytest.fixture(autouse=True)
def small_inline_limit(monkeypatch):
    monkeypatch.setattr(bulk, "BULK_INLINE_MAX", 2)


def test_api_accept_of_many_matching_goes_to_a_worker(
    client, run, reviewer, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            f"/api/runs/{run.pk}/results/accept",
            json.dumps({"filters": {}}),
            content_type="application/json",
            **bearer(reviewer),
        )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["background"], body["done"]) == (6, 0)
    assert len(callbacks) == 1
    assert Result.objects.filter(run=run, reviewed=True).count() == 6
    done = AuditEvent.objects.get(action="bulk.done")
    assert done.after == {"action": "accept", "done": 6}
    assert done.actor == reviewer


def test_a_small_selection_stays_in_the_request(client, run, reviewer):
    ids = list(
        Result.objects.filter(run=run).order_by("pk").values_list("pk", flat=True)[:2]
    )
    response = client.post(
        f"/api/runs/{run.pk}/results/accept",
        json.dumps({"ids": ids}),
        content_type="application/json",
        **bearer(reviewer),
    )
    assert response.json()["background"] == 0
    assert response.json()["done"] == 2


def test_page_assign_of_many_matching_goes_to_a_worker(
    client, run, reviewer, owner, django_capture_on_commit_callbacks
):
    url = reverse("review:explorer_bulk", args=[run.project_id, run.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = login(client, reviewer).post(
            url, {"action": "assign", "scope": "all", "assign_to": owner.username}
        )
    assert response.status_code == 302
    assert Result.objects.filter(run=run, assignee=owner).count() == 6
    assert AuditEvent.objects.filter(action="bulk.done").exists()


def test_viewers_cannot_start_background_work(client, run, viewer):
    response = client.post(
        f"/api/runs/{run.pk}/results/accept",
        json.dumps({"filters": {}}),
        content_type="application/json",
        **bearer(viewer),
    )
    assert response.status_code == 403
    assert not Result.objects.filter(run=run, reviewed=True).exists()
