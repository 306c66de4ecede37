"""API: bulk actions on a run's results and each user's saved explorer filters."""

from __future__ import annotations

import json

import pytest

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result
from evalsite.review.models import ReviewQueue, SavedFilter
from evalsite.review.schemas import ResultQuery
from evalsite.review.services import queue_create
from evalsite.review.services.saved_filters import saved_filter_create
from tests.conftest import bearer
from tests.factories import ProjectFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    analyses = [judged_claims("yes"), judged_claims("no")] * 2
    return make_run(
        project,
        n_items=4,
        kinds=("faithfulness", "hallucination"),
        analyses={"faithfulness": analyses},
    )


@pytest.fixture
def other_run(project):
    return make_run(project, n_items=1)


def _ids(run, **filters):
    return list(
        Result.objects.filter(run=run, **filters)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _post(client, url, body, user):
    return client.post(
        f"/api/{url}", json.dumps(body), content_type="application/json", **bearer(user)
    )


# ------------------------------------------------------------------ bulk


def test_api_bulk_accept_ids_reports_done_and_skipped(client, reviewer, run):
    errored, *rest = _ids(run)[:3]
    Result.objects.filter(pk=errored).update(status=Result.Status.ERROR)
    response = _post(
        client, f"runs/{run.pk}/results/accept", {"ids": [errored, *rest]}, reviewer
    )
    assert response.status_code == 200
    assert response.json() == {
        "action": "accept",
        "done": 2,
        "skipped": 1,
        "skipped_reasons": {"not scored (errored, pending or cancelled)": 1},
        "message": "Accepted 2 results; skipped 1 "
        "(1 not scored (errored, pending or cancelled)).",
        "queue_id": None,
        "queue_url": None,
        "background": 0,
    }
    assert _ids(run, reviewed=True) == rest


def test_api_bulk_accept_all_matching_filters(client, reviewer, run):
    failing = _ids(run, final_passed=False)
    response = _post(
        client,
        f"runs/{run.pk}/results/accept",
        {"filters": {"passed": False}},
        reviewer,
    )
    assert response.json()["done"] == len(failing)
    assert _ids(run, reviewed=True) == failing


def test_api_bulk_refuses_ids_of_another_run_with_the_error_body(
    client, reviewer, run, other_run
):
    foreign = _ids(other_run)[0]
    response = _post(
        client,
        f"runs/{run.pk}/results/accept",
        {"ids": [_ids(run)[0], foreign]},
        reviewer,
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"detail", "errors"}
    assert f"not results of this run ({foreign})" in body["detail"]
    assert body["errors"][0]["field"] == "ids"
    assert not Result.objects.filter(reviewed=True).exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"ids": [1], "filters": {}},
        {"ids": []},
        {"ids": [0]},
        {"ids": list(range(1, 1002))},
        {"filters": {"passed": "maybe"}},
        {"filters": {"colour": "red"}},
        {"ids": [1], "extra": True},
    ],
)
def test_api_bulk_refuses_a_bad_selection_with_422(client, reviewer, run, body):
    response = _post(client, f"runs/{run.pk}/results/accept", body, reviewer)
    assert response.status_code == 422
    assert set(response.json()) == {"detail", "errors"}


def test_api_bulk_assign_and_unassign(client, owner, reviewer, viewer, run):
    picked = _ids(run)[:2]
    url = f"runs/{run.pk}/results/assign"
    response = _post(client, url, {"ids": picked, "assignee": "rita"}, owner)
    assert response.json()["done"] == 2
    assert _ids(run, assignee=reviewer) == picked
    refused = _post(client, url, {"ids": picked, "assignee": "victor"}, owner)
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {"field": "assignee", "message": "Not a reviewer of this project."}
    ]
    response = _post(client, url, {"filters": {}, "assignee": None}, owner)
    assert response.json()["action"] == "unassign"
    assert not Result.objects.filter(assignee__isnull=False).exists()


def test_api_bulk_queue_new_and_append(client, reviewer, run, other_run):
    ids = _ids(run)
    response = _post(
        client,
        f"runs/{run.pk}/results/queue",
        {"ids": ids[:2], "name": "picked"},
        reviewer,
    )
    assert response.status_code == 200
    data = response.json()
    queue = ReviewQueue.objects.get(pk=data["queue_id"])
    assert queue.name == "picked" and queue.size == 2 and data["done"] == 2
    assert data["queue_url"] == f"/projects/{run.project_id}/queues/{queue.pk}/"
    appended = _post(
        client,
        f"runs/{run.pk}/results/queue",
        {"ids": ids[1:4], "queue_id": queue.pk},
        reviewer,
    ).json()
    assert appended["done"] == 2 and appended["skipped"] == 1
    queue.refresh_from_db()
    assert queue.size == 4
    foreign = queue_create(run=other_run, user=reviewer, query=ResultQuery())
    refused = _post(
        client,
        f"runs/{run.pk}/results/queue",
        {"ids": ids[:1], "queue_id": foreign.pk},
        reviewer,
    )
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {"field": "queue", "message": "Not a queue of this run."}
    ]


@pytest.mark.parametrize("action", ["accept", "assign", "queue"])
def test_api_bulk_viewer_403_outsider_404(client, viewer, outsider, run, action):
    body = {"ids": _ids(run)[:1]} | ({"assignee": None} if action == "assign" else {})
    url = f"runs/{run.pk}/results/{action}"
    forbidden = _post(client, url, body, viewer)
    assert forbidden.status_code == 403
    assert set(forbidden.json()) == {"detail", "errors"}
    assert _post(client, url, body, outsider).status_code == 404
    assert (
        client.post(f"/api/{url}", body, content_type="application/json").status_code
        == 401
    )
    assert not Result.objects.filter(reviewed=True).exists()
    assert not AuditEvent.objects.exists()


# ------------------------------------------------------------------ saved filters


def test_api_saved_filters_create_list_get_delete(client, reviewer, owner, project):
    url = f"projects/{project.pk}/saved-filters"
    created = _post(
        client,
        url,
        {"name": "Failing", "filters": {"passed": False, "sort": "-score"}},
        reviewer,
    )
    assert created.status_code == 201
    data = created.json()
    assert data["name"] == "Failing" and data["project_id"] == project.pk
    assert data["query"] == "final=fail&sort=-score"
    assert data["filters"] == {"final_passed": False, "sort": "-score"}
    saved_filter_create(project=project, user=owner, name="theirs", query=ResultQuery())

    listed = client.get(f"/api/{url}", **bearer(reviewer)).json()
    assert listed["count"] == 1
    assert [f["name"] for f in listed["items"]] == ["Failing"]
    detail = client.get(f"/api/saved-filters/{data['id']}", **bearer(reviewer))
    assert detail.json() == data
    deleted = client.delete(f"/api/saved-filters/{data['id']}", **bearer(reviewer))
    assert deleted.status_code == 204
    assert not SavedFilter.objects.filter(user=reviewer).exists()


@pytest.mark.parametrize(
    ("name", "status", "field"),
    [
        ("", 400, "name"),
        ("nul\x00", 400, "name"),
        ("x" * 101, 422, "name"),
    ],
)
def test_api_saved_filter_bad_names(client, reviewer, project, name, status, field):
    response = _post(
        client, f"projects/{project.pk}/saved-filters", {"name": name}, reviewer
    )
    assert response.status_code == status
    assert response.json()["errors"][0]["field"] == field
    assert not SavedFilter.objects.exists()


def test_api_saved_filter_refuses_another_projects_scorer(client, reviewer, project):
    """A run scorer id of another project is refused, not mapped by name (which would
    confirm that project's scorer names); the project's own is accepted."""
    other = make_run(ProjectFactory(), kinds=("toxicity",))
    theirs = other.run_scorers.get()
    url = f"projects/{project.pk}/saved-filters"
    response = _post(
        client,
        url,
        {"name": "Probe", "filters": {"run_scorer_id": theirs.pk}},
        reviewer,
    )
    assert response.status_code == 400, response.content
    assert [e["field"] for e in response.json()["errors"]] == ["run_scorer_id"]
    assert b"toxicity" not in response.content
    assert not SavedFilter.objects.exists()
    mine = make_run(project, kinds=("toxicity",)).run_scorers.get()
    ok = _post(
        client, url, {"name": "Mine", "filters": {"run_scorer_id": mine.pk}}, reviewer
    )
    assert ok.status_code == 201 and ok.json()["query"] == f"run_scorer={mine.pk}"


def test_api_saved_filter_duplicate_name_is_a_field_error(client, reviewer, project):
    url = f"projects/{project.pk}/saved-filters"
    _post(client, url, {"name": "Mine"}, reviewer)
    response = _post(
        client, url, {"name": "Mine", "filters": {"passed": True}}, reviewer
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "name", "message": "You already have a filter with this name."}
    ]


def test_api_saved_filter_of_another_user_or_project_is_404(
    client, reviewer, owner, outsider, viewer, project
):
    theirs = saved_filter_create(
        project=project, user=owner, name="theirs", query=ResultQuery()
    )
    for user in (reviewer, outsider):
        assert (
            client.get(f"/api/saved-filters/{theirs.pk}", **bearer(user)).status_code
            == 404
        )
        assert (
            client.delete(f"/api/saved-filters/{theirs.pk}", **bearer(user)).status_code
            == 404
        )
    # A viewer may list (their own, none) but not write.
    assert client.get(
        f"/api/projects/{project.pk}/saved-filters", **bearer(viewer)
    ).json() == {"count": 0, "items": []}
    assert (
        _post(
            client, f"projects/{project.pk}/saved-filters", {"name": "v"}, viewer
        ).status_code
        == 403
    )
    assert (
        client.delete(f"/api/saved-filters/{theirs.pk}", **bearer(viewer)).status_code
        == 403
    )
    assert (
        client.get(
            f"/api/projects/{project.pk}/saved-filters", **bearer(outsider)
        ).status_code
        == 404
    )
    assert SavedFilter.objects.count() == 1
