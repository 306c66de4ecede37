"""Bulk actions of the results explorer: accept, assign, add to a queue.

Each acts on a `selectors.explorer.Selection` (checked rows, or every result matching
the filter) and needs the review role. Explicit ids are checked to be the run's before
anything changes (`results_selected`); an all-matching selection walks the filter by
primary key (`selection_batches`).

Work is done in batches of BULK_BATCH results, one durable transaction each: 500 rows
is large enough that a 100k-result run takes 200 short transactions rather than 100k
(each batch is a handful of statements: lock, one UPDATE, one multi-row INSERT of audit
events, one review-version bump per scorer), and small enough that a batch holds its row
locks, and the scorer's review-version row that every single override also takes, for
a fraction of a second, keeps one batch of rows in memory, and stays far under the
bound-parameter limits (SQLite 32,766; Postgres 65,535) with 500 ids or 500 × 8 audit
columns. A failure leaves the batches before it committed, which is safe: each batch
is complete and audited on its own, and running the action again skips what is done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from evalsite.accounts.models import REVIEW_ROLES, AuditEvent
from evalsite.accounts.selectors import membership_get, require_role
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, Run
from evalsite.evals.results import batch as result_writes
from evalsite.evals.results.verdicts import review_version_bump
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import (
    Selection,
    results_filter,
    selection_batches,
)
from evalsite.review.models import QueueEntry, ReviewQueue
from evalsite.review.queues.services import QUEUE_MAX, queue_create

BULK_BATCH = 500
# An all-matching accept or assign over more results than this runs in a Celery task
# instead of the request: 20,000 took 8 s on Postgres (0.4 ms a result), so 100,000
# would outlast a web worker's 30 s timeout. 5,000 (about 2 s) stay in the request.
BULK_INLINE_MAX = 5_000

# Why a selected result was left alone, as the summary words it.
SKIP_NOT_SCORED = "not scored (errored, pending or cancelled)"
SKIP_REVIEWED = "already reviewed"
SKIP_UNASSIGNED = "already unassigned"
SKIP_IN_QUEUE = "already in the queue"
SKIP_QUEUE_FULL = f"over the queue limit of {QUEUE_MAX}"


@dataclass
class BulkOutcome:
    """What a bulk action did: how many results it changed and why it skipped others."""

    action: str
    done: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    queue: ReviewQueue | None = None
    # Results handed to a worker instead (a large all-matching selection): nothing
    # is done or skipped here yet.
    background: int = 0

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """E.g. "Accepted 40 results; skipped 3 (2 not scored …, 1 already reviewed)."""
        if self.background:
            return (
                f"{self.background} results go to a worker; the run's audit log "
                "says when they are done."
            )
        verb = {
            "accept": "Accepted",
            "assign": "Assigned",
            "unassign": "Unassigned",
            "queue": "Queued",
        }[self.action]
        text = f"{verb} {_results(self.done)}"
        if self.queue is not None:
            text += f" in “{self.queue.name}”"
        if self.skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
            text += f"; skipped {self.skipped_total} ({reasons})"
        return text + "."


def _results(n: int) -> str:
    return f"{n} result{'' if n == 1 else 's'}"


def _require_reviewer(*, run: Run, user: User) -> None:
    """Bulk writes need the review role, whatever the caller checked (404 outsider,
    403 viewer): a forged post from a viewer changes nothing."""
    require_role(membership_get(user=user, project_id=run.project_id), write=True)


# ------------------------------------------------------------------ accept


def results_accept(*, run: Run, user: User, selection: Selection) -> BulkOutcome:
    """Accept the current verdict of every selected result, as `result_accept` does one
    at a time: reviewed by `user`, human pass = final pass, version + 1, one
    "result.accept" audit event each with the same summary, before and after.

    Results that are not scored (errored, pending, cancelled) cannot be reviewed and
    are skipped; so are results already reviewed, so a bulk accept never silently
    replaces someone's review. Batches of BULK_BATCH (see the module docstring).
    """
    _require_reviewer(run=run, user=user)
    outcome = BulkOutcome(action="accept")
    scorer_names = {rs.pk: rs.name for rs in run.run_scorers.all()}
    for ids in selection_batches(
        run=run, selection=selection, user=user, size=BULK_BATCH
    ):
        _accept_batch(run, user, ids, scorer_names, outcome)
    return outcome


@transaction.atomic(durable=True)
def _accept_batch(
    run: Run,
    user: User,
    ids: list[int],
    scorer_names: dict[int, str],
    outcome: BulkOutcome,
) -> None:
    """1. Lock the batch's rows in id order (the order every writer locks results in,
       so two bulk actions never deadlock) and read what the audit shows.
    2. Skip the unscored and the reviewed; one UPDATE marks the rest reviewed.
    3. Insert their audit events in one statement.
    4. Bump each touched scorer's review version once: the cached review aggregates
       are keyed by it, so the next read recounts them (one batch is many changes,
       which review_groups_advance, folding in one change, cannot carry)."""
    rows = list(
        Result.objects.select_for_update(of=("self",))
        .filter(run=run, pk__in=ids)
        .order_by("pk")
        .values(
            "pk",
            "status",
            "reviewed",
            "final_score",
            "final_passed",
            "human_passed",
            "run_scorer_id",
            "item__index",
        )
    )
    accepted = []
    for row in rows:
        if row["status"] != Result.Status.OK:
            outcome.skipped[SKIP_NOT_SCORED] += 1
        elif row["reviewed"]:
            outcome.skipped[SKIP_REVIEWED] += 1
        else:
            accepted.append(row)
    if not accepted:
        return
    now = timezone.now()
    result_writes.results_mark_accepted(
        result_ids=[row["pk"] for row in accepted], user=user, now=now
    )
    name = user.get_username()
    AuditEvent.objects.bulk_create(
        AuditEvent(
            project_id=run.project_id,
            run_id=run.pk,
            result_id=row["pk"],
            object_type="result",
            actor=user,
            action="result.accept",
            summary=(
                f"{name} accepted {'pass' if row['final_passed'] else 'fail'} on item "
                f"{row['item__index'] + 1} · {scorer_names.get(row['run_scorer_id'], '')}"
            )[:500],
            before=_accept_snapshot(row, reviewed=False),
            after={**_accept_snapshot(row, reviewed=True), "bulk": True},
        )
        for row in accepted
    )
    for run_scorer_id in sorted({row["run_scorer_id"] for row in accepted}):
        review_version_bump(run_scorer_id)
    outcome.done += len(accepted)


def _accept_snapshot(row: Mapping[str, Any], *, reviewed: bool) -> dict[str, Any]:
    """The before/after of a single accept (overrides._snapshot + human_passed)."""
    return {
        "final_score": row["final_score"],
        "final_passed": row["final_passed"],
        "reviewed": reviewed,
        "human_passed": row["final_passed"] if reviewed else row["human_passed"],
    }


# ------------------------------------------------------------------ assign


def assignee_get(*, run: Run, username: str) -> User:
    """A member of the run's project who may review, by username; ApplicationError on
    "assignee" otherwise (viewers and outsiders cannot be given work)."""
    user = (
        get_user_model()
        .objects.filter(
            username=username,
            memberships__project_id=run.project_id,
            memberships__role__in=REVIEW_ROLES,
        )
        .first()
    )
    if user is None:
        raise ApplicationError(
            f"{username!r} is not a reviewer of this project.",
            field_errors={"assignee": "Not a reviewer of this project."},
        )
    return user


def results_assign(
    *, run: Run, user: User, selection: Selection, assignee: User | None
) -> BulkOutcome:
    """Assign the selected results to `assignee` (None: unassign), audited per result
    like the queue's round-robin ("result.assign", before and after assignee).
    Results that already have that assignee are skipped. `assignee` must come from
    `assignee_get` (a reviewer of the project)."""
    _require_reviewer(run=run, user=user)
    outcome = BulkOutcome(action="assign" if assignee is not None else "unassign")
    for ids in selection_batches(
        run=run, selection=selection, user=user, size=BULK_BATCH
    ):
        _assign_batch(run, user, ids, assignee, outcome)
    return outcome


@transaction.atomic(durable=True)
def _assign_batch(
    run: Run,
    user: User,
    ids: list[int],
    assignee: User | None,
    outcome: BulkOutcome,
) -> None:
    target_id = assignee.pk if assignee is not None else None
    rows = list(
        Result.objects.select_for_update(of=("self",))
        .filter(run=run, pk__in=ids)
        .order_by("pk")
        .values_list("pk", "assignee_id", "assignee__username")
    )
    changed = [row for row in rows if row[1] != target_id]
    if len(changed) < len(rows):
        reason = (
            f"already assigned to {assignee.get_username()}"
            if assignee is not None
            else SKIP_UNASSIGNED
        )
        outcome.skipped[reason] += len(rows) - len(changed)
    if not changed:
        return
    result_writes.results_assign(
        result_ids=[pk for pk, _, _ in changed], assignee=assignee, now=timezone.now()
    )
    new_name = assignee.get_username() if assignee is not None else None
    summary = f"assigned to {new_name}" if new_name else "unassigned"
    AuditEvent.objects.bulk_create(
        AuditEvent(
            project_id=run.project_id,
            run_id=run.pk,
            result_id=pk,
            object_type="result",
            actor=user,
            action="result.assign",
            summary=f"{summary} (bulk)",
            before={"assignee": before_name},
            after={"assignee": new_name, "bulk": True},
        )
        for pk, _, before_name in changed
    )
    outcome.done += len(changed)


# ------------------------------------------------------------------ queue


def results_enqueue(
    *,
    run: Run,
    user: User,
    selection: Selection,
    queue: ReviewQueue | None = None,
    name: str = "",
    blind: bool = False,
) -> BulkOutcome:
    """Put the selected results in a queue.

    Without `queue`, a new one (queue_create: its limits, audit and the project's
    overlap): all-matching selections are a FILTERS queue of that filter, checked rows
    a queue of those rows in item order. With `queue` (one of this run's, found with
    queue_get_for_user), the results it does not hold yet are appended after its last
    position, up to QUEUE_MAX entries in all.
    """
    _require_reviewer(run=run, user=user)
    if queue is not None:
        return _queue_append(run=run, user=user, selection=selection, queue=queue)
    if selection.query is not None:
        created = queue_create(
            run=run, user=user, query=selection.query, name=name, blind=blind
        )
    else:
        ids = [
            pk
            for batch in selection_batches(
                run=run, selection=selection, user=user, size=BULK_BATCH
            )
            for pk in batch
        ]
        created = queue_create(
            run=run,
            user=user,
            query=ResultQuery(),
            name=name or f"Selected · {run} · {_results(len(ids))}",
            blind=blind,
            result_ids=ids,
        )
    return BulkOutcome(action="queue", done=created.size, queue=created)


@transaction.atomic(durable=True)
def _queue_append(
    *, run: Run, user: User, selection: Selection, queue: ReviewQueue
) -> BulkOutcome:
    """Append inside one transaction, the queue row locked (positions are max + 1…,
    and two appends must not take the same ones). At most QUEUE_MAX entries are
    written, so the transaction stays bounded however many results match."""
    if queue.run_id != run.pk:
        raise ApplicationError(
            "That queue belongs to another run.",
            field_errors={"queue": "Not a queue of this run."},
        )
    if queue.is_stratified:
        # Its estimates weigh each stratum by how it was sampled; extra rows would
        # bias them.
        raise ApplicationError(
            "A stratified sample cannot take more results; create a new queue.",
            field_errors={"queue": "Stratified samples are fixed."},
        )
    locked = ReviewQueue.objects.select_for_update().get(pk=queue.pk)
    entries = QueueEntry.objects.filter(queue=locked)
    position = entries.aggregate(last=Max("position"))["last"] or 0
    size = entries.count()
    outcome = BulkOutcome(action="queue", queue=locked)
    added: list[int] = []
    for ids in selection_batches(
        run=run, selection=selection, user=user, size=BULK_BATCH
    ):
        held = set(
            entries.filter(result_id__in=ids).values_list("result_id", flat=True)
        )
        new = [pk for pk in ids if pk not in held]
        outcome.skipped[SKIP_IN_QUEUE] += len(held)
        room = max(QUEUE_MAX - size, 0)
        outcome.skipped[SKIP_QUEUE_FULL] += max(len(new) - room, 0)
        new = new[:room]
        QueueEntry.objects.bulk_create(
            QueueEntry(queue=locked, result_id=pk, position=position + i)
            for i, pk in enumerate(new, 1)
        )
        position += len(new)
        size += len(new)
        added.extend(new)
    outcome.skipped = +outcome.skipped  # drop the zero counts
    if added:
        locked.size = size
        locked.save(update_fields=["size"])
        AuditEvent.objects.create(
            project_id=run.project_id,
            run_id=run.pk,
            object_type="queue",
            actor=user,
            action="queue.append",
            summary=f"added {_results(len(added))} to queue “{locked.name}”",
            before={"queue_id": locked.pk, "size": size - len(added)},
            after={"queue_id": locked.pk, "size": size, "result_ids": added[:100]},
        )
    outcome.done = len(added)
    return outcome


def bulk_runs_in_background(*, run: Run, user: User, selection: Selection) -> int:
    """How many results an all-matching selection covers when that is more than a
    request should handle (BULK_INLINE_MAX), else 0 (do it now)."""
    if selection.query is None:
        return 0
    _require_reviewer(run=run, user=user)
    matching = results_filter(run=run, query=selection.query, user=user).order_by()
    if matching[: BULK_INLINE_MAX + 1].count() <= BULK_INLINE_MAX:
        return 0
    return matching.count()
