"""Deletions too large for a request (more than DELETE_INLINE_MAX_ROWS rows, lowered
here): the object is marked and hidden at once, a worker deletes exactly what the
inline deletion would and records the same event, running the task again does
nothing, a failure leaves the object as it was, and only owners of its project can
start one (from the pages, the API or the admin)."""

from __future__ import annotations

from unittest import mock

import pytest
from celery import current_app
from django.db import OperationalError, connection
from django.test import override_settings
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.datasets.models import Dataset
from evalsite.evals.models import Result, Run
from evalsite.review.housekeeping.services import (
    object_delete_marked,
    object_delete_request,
)
from evalsite.review.models import ReviewQueue
from evalsite.review.tasks import review_object_delete
from tests.conftest import bearer, login
from tests.factories import ProjectFactory
from tests.review.housekeeping.world import (
    World,
    build_world,
    changes,
    orphans,
    project_rows,
    table_counts,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="deletion is checked on Postgres"
    ),
]

# A run of the world has about 20 rows with it: 5 sends every deletion but a
# judge's or a scorer's to a worker.
small_limit = override_settings(DELETE_INLINE_MAX_ROWS=5)


@pytest.fixture
def worlds(project, owner) -> tuple[World, World]:
    other = ProjectFactory(name="Other team")
    worlds = build_world(project, owner), build_world(other, owner)
    ReviewQueue.objects.update(archived=True)  # closed: they let the runs go
    return worlds


def _delete_url(world: World, kind: str, pk: int) -> str:
    return reverse("review:object_delete", args=[world.project.pk, kind, pk])


def _runs_page(client, world: World, archived: bool = False) -> str:
    url = reverse("evals:runs", args=[world.project.pk])
    return client.get(url + ("?archived=1" if archived else "")).content.decode()


def _rows(world: World) -> dict:
    """The project's rows but its audit events (a failure adds one)."""
    rows = project_rows(world.project)
    rows.pop("accounts.AuditEvent")
    return rows


def _audited(action: str, project) -> dict:
    event = AuditEvent.objects.get(action=action, project=project)
    before = dict(event.before)
    before.pop("runs", None)  # the ids, which differ between the two worlds
    before.pop("closed_queues", None)
    return before


def test_a_large_delete_is_marked_hidden_then_done_by_the_task(
    client, worlds, owner, django_capture_on_commit_callbacks
):
    world, other = worlds
    login(client, owner)
    run = world.run
    # The inline deletion of the other world's run (the same shape), to compare with.
    before = table_counts()
    assert not object_delete_request(kind="runs", obj=other.run, user=owner).background
    inline_changes = changes(before, table_counts())
    world_rows = _rows(world)
    assert f'id="archive-runs-{run.pk}"' in _runs_page(client, world)

    with small_limit, django_capture_on_commit_callbacks() as callbacks:
        response = client.post(
            _delete_url(world, "runs", run.pk), {"confirm": str(run)}, follow=True
        )
    body = response.content.decode()
    assert f"Deleting the run “{run}” in the background" in body
    assert len(callbacks) == 1
    # Marked, nothing deleted yet: hidden from the list, “Deleting…” among the
    # archived, no archive, delete or second deletion.
    run.refresh_from_db()
    assert run.deleting and run.archived
    assert _rows(world) == world_rows
    assert f"runs-{run.pk}" not in _runs_page(client, world)
    archived = _runs_page(client, world, archived=True)
    assert f'id="deleting-runs-{run.pk}"' in archived
    assert f'id="unarchive-runs-{run.pk}"' not in archived
    unarchive = reverse(
        "review:object_unarchive", args=[world.project.pk, "runs", run.pk]
    )
    assert "is being deleted" in client.post(unarchive, follow=True).content.decode()
    page = client.get(_delete_url(world, "runs", run.pk)).content.decode()
    assert "being deleted in the background" in page and 'id="delete-form"' not in page
    response = client.post(_delete_url(world, "runs", run.pk), {"confirm": str(run)})
    assert response.status_code == 409
    run.refresh_from_db()
    assert run.deleting and run.archived

    # The worker: exactly the rows the inline deletion deleted, the same event.
    before = table_counts()
    callbacks[0]()
    assert changes(before, table_counts()) == inline_changes
    assert not Run.objects.filter(pk=run.pk).exists()
    assert orphans() == []
    assert _audited("run.delete", world.project) == _audited(
        "run.delete", other.project
    )
    event = AuditEvent.objects.get(action="run.delete", project=world.project)
    assert event.actor == owner and event.object_id == run.pk

    # Again (a redelivered message): nothing happens.
    before = table_counts()
    review_object_delete("runs", run.pk, owner.pk, False)
    assert table_counts() == before


def test_a_large_dataset_delete_over_the_api_answers_202(
    client, worlds, owner, django_capture_on_commit_callbacks
):
    world, _ = worlds
    dataset = world.dataset_v1
    url = f"/api/projects/{world.project.pk}/datasets/{dataset.pk}"
    headers = bearer(owner)
    with small_limit, django_capture_on_commit_callbacks() as callbacks:
        response = client.delete(url, **headers)
    assert response.status_code == 202
    assert response.json() == {
        "kind": "datasets",
        "id": dataset.pk,
        "name": str(dataset),
        "status": "deleting",
    }
    listed = client.get(f"/api/projects/{world.project.pk}/datasets", **headers)
    assert dataset.pk not in [d["id"] for d in listed.json()["items"]]
    assert client.delete(url, **headers).status_code == 409
    for callback in callbacks:
        callback()
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert not Run.objects.filter(pk=world.run.pk).exists()
    event = AuditEvent.objects.get(action="dataset.delete")
    assert event.before["counts"]["items"] == dataset.item_count


def test_small_deletes_stay_in_the_request(client, worlds, owner):
    world, _ = worlds
    login(client, owner)
    response = client.post(
        _delete_url(world, "queues", world.queue.pk),
        {"confirm": world.queue.name},
        follow=True,
    )
    assert "Deleted the queue" in response.content.decode()
    assert not ReviewQueue.objects.filter(pk=world.queue.pk).exists()


def test_a_task_that_finds_the_delete_blocked_puts_the_object_back(
    client, worlds, owner, django_capture_on_commit_callbacks
):
    world, _ = worlds
    login(client, owner)
    run = world.run
    rows = _rows(world)
    with small_limit, django_capture_on_commit_callbacks() as callbacks:
        client.post(_delete_url(world, "runs", run.pk), {"confirm": str(run)})
    # Reopened before the worker got to it.
    ReviewQueue.objects.filter(pk=world.queue.pk).update(archived=False)
    callbacks[0]()
    run.refresh_from_db()
    assert not run.deleting and not run.archived
    assert _rows(world) == rows
    event = AuditEvent.objects.get(action="run.delete_failed")
    assert event.run_id == run.pk and world.queue.name in event.summary
    assert f'id="archive-runs-{run.pk}"' in _runs_page(client, world)
    # The task again: no longer marked, nothing to do.
    review_object_delete("runs", run.pk, owner.pk, False)
    assert Run.objects.filter(pk=run.pk).exists()
    assert AuditEvent.objects.filter(action="run.delete_failed").count() == 1


def test_a_task_that_fails_rolls_back_and_clears_the_mark(
    client, worlds, owner, django_capture_on_commit_callbacks
):
    world, _ = worlds
    login(client, owner)
    run = world.run
    Run.objects.filter(pk=run.pk).update(archived=True)  # archived before: stays so
    rows = _rows(world)
    with small_limit, django_capture_on_commit_callbacks() as callbacks:
        client.post(_delete_url(world, "runs", run.pk), {"confirm": str(run)})
    with mock.patch(
        "evalsite.review.housekeeping.services.cascade_delete",
        autospec=True,
        side_effect=OperationalError("server closed the connection"),
    ) as cascade_delete:
        # A try the task will repeat keeps the mark.
        with pytest.raises(OperationalError):
            object_delete_marked(
                kind="runs", pk=run.pk, user_id=owner.pk, archived=True, may_retry=True
            )
        run.refresh_from_db()
        assert run.deleting
        # The task tries four times, then gives up. Eager Celery re-runs a task
        # that asks for a retry at once unless errors propagate (then it raises
        # the Retry): as tests/webhooks does, let them not, here.
        conf = current_app.conf
        propagates, conf.task_eager_propagates = conf.task_eager_propagates, False
        try:
            callbacks[0]()
        finally:
            conf.task_eager_propagates = propagates
    assert cascade_delete.call_count == 1 + 4
    run.refresh_from_db()
    assert not run.deleting and run.archived
    assert _rows(world) == rows
    assert Result.objects.filter(run=run).exists()
    event = AuditEvent.objects.get(action="run.delete_failed")
    assert "OperationalError" in event.summary
    assert not AuditEvent.objects.filter(action="run.delete").exists()


@pytest.mark.parametrize("who", ["viewer", "reviewer", "outsider"])
@pytest.mark.parametrize("kind", ["runs", "datasets", "queues"])
def test_only_owners_start_a_background_delete(
    client, worlds, who, kind, request, django_capture_on_commit_callbacks
):
    world, _ = worlds
    obj = {"runs": world.run, "datasets": world.dataset_v1, "queues": world.queue}[kind]
    user = request.getfixturevalue(who)
    login(client, user)
    expected = 404 if who == "outsider" else 403
    api = f"/api/projects/{world.project.pk}/{kind}/{obj.pk}"
    with small_limit, django_capture_on_commit_callbacks() as callbacks:
        url = _delete_url(world, kind, obj.pk)
        assert client.post(url, {"confirm": str(obj)}).status_code == expected
        assert client.delete(api, **bearer(user)).status_code == expected
    assert callbacks == []
    obj.refresh_from_db()
    assert not obj.deleting


# The admin.


def test_the_admin_counts_instead_of_listing_and_deletes_in_the_background(
    admin_client, admin_user, worlds, django_capture_on_commit_callbacks
):
    world, _ = worlds
    run = world.run
    url = f"/admin/evals/run/{run.pk}/delete/"
    body = admin_client.get(url).content.decode()
    results = Result.objects.filter(run=run).count()
    assert f"{results:,} results" in body
    assert "Result object" not in body  # no row of them listed
    with small_limit, django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert f"Deleting the run “{run}” in the background" in response.content.decode()
    run.refresh_from_db()
    assert run.deleting
    callbacks[0]()
    assert not Run.objects.filter(pk=run.pk).exists()
    event = AuditEvent.objects.get(action="run.delete")
    assert event.actor == admin_user
    assert event.before["counts"]["results"] == results


def test_the_admin_names_what_stops_a_delete(admin_client, worlds):
    world, _ = worlds
    ReviewQueue.objects.filter(pk=world.queue.pk).update(archived=False)
    url = f"/admin/evals/run/{world.run.pk}/delete/"
    body = admin_client.get(url).content.decode()
    assert "archive the queue" in body
    admin_client.post(url, {"post": "yes"})
    assert Run.objects.filter(pk=world.run.pk).exists()


def test_the_admin_deletes_a_dataset_and_a_queue_like_the_pages(
    admin_client, worlds, django_capture_on_commit_callbacks
):
    world, _ = worlds
    response = admin_client.post(
        f"/admin/review/reviewqueue/{world.queue.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert AuditEvent.objects.filter(action="queue.delete").count() == 1
    with small_limit, django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/datasets/dataset/",
            {
                "action": "delete_selected",
                "_selected_action": [world.dataset_v1.pk],
                "post": "yes",
            },
        )
    assert response.status_code == 302
    assert not Dataset.objects.filter(pk=world.dataset_v1.pk).exists()
    assert AuditEvent.objects.filter(action="dataset.delete").count() == 1


def test_the_admin_deletes_a_project_by_the_cascade(admin_client, worlds, owner):
    world, other = worlds
    other_rows = project_rows(other.project)
    url = f"/admin/accounts/project/{world.project.pk}/delete/"
    body = admin_client.get(url).content.decode()
    results = Result.objects.filter(run__project=world.project).count()
    assert f"{results:,} results" in body
    assert "Result object" not in body
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not Run.objects.filter(project=world.project).exists()
    assert orphans() == []
    assert project_rows(other.project) == other_rows


def test_the_admin_refuses_a_project_too_large_for_a_request(admin_client, worlds):
    world, _ = worlds
    url = f"/admin/accounts/project/{world.project.pk}/delete/"
    with small_limit:
        body = admin_client.get(url).content.decode()
        assert "too many for a request" in body
        admin_client.post(url, {"post": "yes"})
    assert Run.objects.filter(pk=world.run.pk).exists()
    Run.objects.filter(pk=world.run.pk).update(status=Run.Status.RUNNING)
    assert "cancel it" in admin_client.get(url).content.decode()
    admin_client.post(url, {"post": "yes"})
    assert Run.objects.filter(pk=world.run.pk).exists()


def test_no_new_work_starts_on_what_is_being_deleted(
    client, worlds, owner, django_capture_on_commit_callbacks
):
    from evalsite.core.exceptions import ApplicationError, ConflictError
    from evalsite.evals.runs.services import run_rejudge, run_start
    from evalsite.review.explorer.schemas import ResultQuery
    from evalsite.review.pairwise.services import pairwise_queue_create
    from evalsite.review.queues.services import queue_create

    world, _ = worlds
    login(client, owner)
    with small_limit, django_capture_on_commit_callbacks():
        client.post(
            _delete_url(world, "datasets", world.dataset_v1.pk),
            {"confirm": str(world.dataset_v1)},
        )
        client.post(
            _delete_url(world, "runs", world.run_b.pk), {"confirm": str(world.run_b)}
        )
    world.dataset_v1.refresh_from_db()
    assert world.dataset_v1.deleting
    with pytest.raises(ApplicationError, match="being deleted"):
        run_start(
            project=world.project,
            user=owner,
            dataset=world.dataset_v1,
            scorers=[world.scorer_v2],
        )
    run = Run.objects.get(pk=world.run_b.pk)
    assert run.deleting
    with pytest.raises(ConflictError, match="being deleted"):
        queue_create(run=run, user=owner, query=ResultQuery())
    with pytest.raises(ConflictError, match="being deleted"):
        run_rejudge(run=run, user=owner)
    with pytest.raises(ConflictError, match="being deleted"):
        pairwise_queue_create(run_a=world.run, run_b=run, user=owner)


@pytest.mark.parametrize("kind", ["runs", "datasets", "queues"])
def test_the_limit_counts_each_row_once(worlds, kind):
    """A result is reached by its run and by its run scorer: counted once, as the
    plan counts it, so the limit is exactly the plan's total."""
    from evalsite.review.housekeeping.selectors import deletion_plan

    world, _ = worlds
    obj = {"runs": world.run, "datasets": world.dataset_v1, "queues": world.queue}[kind]
    plan = deletion_plan(kind=kind, obj=obj)
    assert plan.cascade is not None
    assert plan.cascade.exceeds(plan.total - 1)
    assert not plan.cascade.exceeds(plan.total)
