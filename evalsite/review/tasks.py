"""Review work too large for a web request: bulk accept / assign over every result
matching a filter (see services.bulk and views.explorer), and matching a new dataset
version with the previous one for compare (services.dataset_matches)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from evalsite.accounts.services.audit import audit_event
from evalsite.evals.models import Run
from evalsite.lib.tasks import task_send_on_commit
from evalsite.review.schemas import ResultQuery
from evalsite.review.selectors.explorer import Selection
from evalsite.review.services.bulk import (
    bulk_runs_in_background,
    results_accept,
    results_assign,
)
from evalsite.review.services.dataset_matches import dataset_versions_match

BULK_ACTION_APPLY_TASK = "review.bulk_action_apply"
DATASET_VERSIONS_MATCH_TASK = "review.dataset_versions_match"


@shared_task(name=BULK_ACTION_APPLY_TASK, acks_late=True)
def review_bulk_action(
    run_id: int,
    user_id: int,
    action: str,
    query: dict[str, Any],
    assignee_id: int | None = None,
) -> str:
    """Accept or assign every result of the run matching `query` (the explorer's
    parameters), as `user` did it, then say so in the run's audit log. Safe to run
    again: each batch skips what is already done."""
    users = get_user_model().objects
    run = Run.objects.select_related("project").get(pk=run_id)
    user = users.get(pk=user_id)
    selection = Selection(
        query=ResultQuery.from_querydict(query, run_scorers=run.run_scorers.all())
    )
    if action == "accept":
        outcome = results_accept(run=run, user=user, selection=selection)
    else:
        assignee = users.get(pk=assignee_id) if assignee_id is not None else None
        outcome = results_assign(
            run=run, user=user, selection=selection, assignee=assignee
        )
    audit_event(
        project=run.project,
        actor=user,
        action="bulk.done",
        summary=f"{outcome.summary()[:-1]} (bulk action in the background).",
        after={"action": outcome.action, "done": outcome.done},
        run=run,
    )
    return outcome.summary()


# The task's name before tasks were named `<app>.<noun>_<verb>`: the same function, kept
# registered for one release so that a message already queued under it is not lost.
# Remove it in the next release.
review_bulk_action_drain = shared_task(name="review.bulk_action", acks_late=True)(
    review_bulk_action.run
)


@shared_task(name=DATASET_VERSIONS_MATCH_TASK, acks_late=True)
def dataset_versions_match_task(dataset_id: int) -> int:
    """Match a new dataset version with its previous version, so that the first
    compare of runs on the two finds the matching stored. Safe to run again: a
    stored matching is kept. Returns how many rules were matched."""
    return len(dataset_versions_match(dataset_id=dataset_id))


def dataset_versions_match_on_commit(dataset_id: int) -> None:
    """Send dataset_versions_match_task once the upload's transaction commits. The
    upload stands whether or not the message goes out (robust: a broker down is
    logged); compare then matches the versions itself on its first page."""
    task_send_on_commit(DATASET_VERSIONS_MATCH_TASK, dataset_id, robust=True)


def bulk_start_in_background(
    *,
    user: User,
    run: Run,
    action: str,
    selection: Selection,
    assignee: User | None = None,
) -> int:
    """Send a large all-matching accept or assign to a worker once the request's
    transaction commits, returning how many results it covers; 0 when the selection
    is small enough to do in the request."""
    count = bulk_runs_in_background(run=run, user=user, selection=selection)
    if not count:
        return 0
    assert selection.query is not None
    query = selection.query.to_querydict()
    assignee_id = assignee.pk if assignee is not None else None
    task_send_on_commit(
        BULK_ACTION_APPLY_TASK, run.pk, user.pk, action, query, assignee_id
    )
    return count
