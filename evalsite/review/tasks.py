"""Review work too large for a web request: deleting a large run, dataset or queue
(housekeeping), and bulk accept / assign over every result matching a filter (see
explorer.bulk and explorer.views)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import OperationalError

from evalsite.accounts.services.audit import audit_event
from evalsite.evals.models import Run
from evalsite.lib.tasks import task_send_on_commit
from evalsite.review.explorer.bulk import (
    bulk_runs_in_background,
    results_accept,
    results_assign,
)
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import Selection
from evalsite.review.housekeeping.selectors import kind_of
from evalsite.review.housekeeping.services import (
    OBJECT_DELETE_TASK,
    object_delete_marked,
)
from evalsite.review.team.agreement import AGREEMENT_RECOUNT_TASK, agreement_recount

OBJECT_DELETE_RETRIES = 3

BULK_ACTION_APPLY_TASK = "review.bulk_action_apply"


# Above the default limits (600 s soft): bench/bench_delete.py deleted a
# million-result run in 126 s, so this allows ten times that and some; still below
# the broker's visibility timeout (3600 s), so a running deletion is not redelivered.
# A lost or refused database connection is retried (the deletion rolled back whole,
# the object stays marked meanwhile): three more tries, 30 s, 60 s, 120 s apart.
@shared_task(
    bind=True,
    name=OBJECT_DELETE_TASK,
    soft_time_limit=1800,
    time_limit=1860,
    max_retries=OBJECT_DELETE_RETRIES,
)
def review_object_delete(
    self: Any, kind: str, pk: int, user_id: int | None, archived: bool
) -> None:
    """Delete a run, dataset or queue marked `deleting` by a delete button, as
    `user_id` asked; `archived` is what it was before (restored if this fails).
    Safe to run again: an object already deleted, or no longer marked, is left be."""
    retries = self.request.retries
    try:
        object_delete_marked(
            kind=kind_of(kind),
            pk=pk,
            user_id=user_id,
            archived=archived,
            may_retry=retries < OBJECT_DELETE_RETRIES,
        )
    except OperationalError as exc:
        if retries < OBJECT_DELETE_RETRIES:
            raise self.retry(exc=exc, countdown=30 * 2**retries) from exc
        raise


@shared_task(name=AGREEMENT_RECOUNT_TASK, acks_late=True)
def review_agreement_recount(run_id: int, epsilon: float) -> None:
    """Recount the agreement page's figures of the run's current review state (the
    page shows the latest ones, marked, meanwhile). Safe to run again: a second
    run finds them cached."""
    agreement_recount(run_id=run_id, epsilon=epsilon)


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
