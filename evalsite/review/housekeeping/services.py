"""Archive, unarchive and delete, for every kind the housekeeping pages handle.

Archiving is each app's own service; deleting is here: it locks what it deletes,
checks again in its transaction what could stop it, deletes exactly the rows the
confirmation page counted, by Django's on_delete rules, a table at a time
(evalsite.lib.cascade), and records one audit event with the counts of everything
that went. A deletion of more than settings.DELETE_INLINE_MAX_ROWS rows is not done
in the request: the object is marked `deleting` (and archived, so lists and pickers
hide it) and a worker deletes it the same way (the task review.object_delete)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, transaction
from django.db.models import Q

from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.datasets.services import dataset_set_archived
from evalsite.evals.judges.services import judge_set_archived
from evalsite.evals.models import Run, ScorerConfig
from evalsite.evals.runs.services import run_set_archived
from evalsite.evals.scorers.services import scorer_set_archived
from evalsite.lib.cascade import cascade_delete
from evalsite.lib.tasks import task_send_on_commit
from evalsite.review.housekeeping.selectors import (
    KIND_INFO,
    DeletionPlan,
    Kind,
    deletion_plan,
    object_label,
    scorer_lineage,
)
from evalsite.review.queues.services import queue_set_archived

logger = logging.getLogger(__name__)

OBJECT_DELETE_TASK = "review.object_delete"


def object_set_archived(*, kind: Kind, obj: Any, user: User, archived: bool) -> Any:
    """Archive or unarchive `obj` through its own app's service (audited there);
    ConflictError while a worker deletes it (unarchiving would show it again)."""
    if getattr(obj, "deleting", False):
        raise ConflictError(f"This {KIND_INFO[kind].noun} is being deleted.")
    if kind == "runs":
        return run_set_archived(run=obj, user=user, archived=archived)
    if kind == "datasets":
        return dataset_set_archived(dataset=obj, user=user, archived=archived)
    if kind == "scorers":
        return scorer_set_archived(scorer=obj, user=user, archived=archived)
    if kind == "judges":
        return judge_set_archived(judge=obj, user=user, archived=archived)
    return queue_set_archived(queue=obj, user=user, archived=archived)


def _lock(kind: Kind, obj: Any, *, marked: bool = False) -> Any:
    """Lock the rows the deletion removes or depends on, so that no run starts on
    them and no queue is made from them until it commits (their inserts wait on
    these locks, then find the rows gone)."""
    model = KIND_INFO[kind].model
    locked: Any = model._default_manager.select_for_update().filter(pk=obj.pk).first()
    if locked is None:
        raise ConflictError(f"This {KIND_INFO[kind].noun} was deleted already.")
    if getattr(locked, "deleting", False) != marked:
        # A second request while a worker deletes it; or a worker whose object's
        # mark was cleared (a deletion that failed), which must not delete it.
        raise ConflictError(f"This {KIND_INFO[kind].noun} is being deleted.")
    if kind == "datasets":
        list(Run.objects.select_for_update().filter(dataset=locked))
    elif kind == "judges":
        list(ScorerConfig.objects.select_for_update().filter(judge=locked))
    elif kind == "scorers":
        ids = [s.pk for s in scorer_lineage(locked)]
        list(ScorerConfig.objects.select_for_update().filter(pk__in=ids))
    locked.project = obj.project
    return locked


def object_delete(
    *,
    kind: Kind,
    obj: Any,
    user: User | None,
    durable: bool = True,
    marked: bool = False,
) -> DeletionPlan:
    """Delete `obj` and everything its plan names, in one transaction, audited.
    Raises ConflictError (nothing deleted) when a queued or running run or an open
    queue needs it. `durable=False` for the admin, which deletes in its own
    transaction; `marked` for the worker, which deletes only an object still marked
    `deleting`."""
    with transaction.atomic(durable=durable):
        locked = _lock(kind, obj, marked=marked)
        plan = deletion_plan(kind=kind, obj=locked, count=False)
        if plan.blockers:
            raise ConflictError(" ".join(plan.blockers))
        run_ids = (
            list(
                Run.objects.filter(
                    Q(pk=locked.pk) if kind == "runs" else Q(dataset=locked)
                ).values_list("pk", flat=True)
            )
            if kind in ("runs", "datasets")
            else []
        )
        assert plan.cascade is not None
        # The counts are the rows the deletion deleted: the same as the page's COUNTs
        # (the same querysets), without counting a million rows before deleting them.
        plan.set_counts(*cascade_delete(plan.cascade))
        noun = KIND_INFO[kind].noun
        parts = ", ".join(f"{line.count:,} {line.label}" for line in plan.removals)
        audit_event(
            project=locked.project,
            actor=user,
            action=f"{noun}.delete",
            summary=f"{_who(user)} deleted {noun} “{plan.name}” (#{locked.pk}): {parts}",
            run=locked if kind == "runs" else None,
            object_type=noun,
            object_id=locked.pk,
            object_label=plan.name,
            before={
                "counts": plan.counts,
                "unlinked": {line.label: line.count for line in plan.unlinks},
                **({"runs": run_ids} if run_ids else {}),
                **({"closed_queues": plan.closed_queues} if plan.closed_queues else {}),
            },
        )
    return plan


def _who(user: User | None) -> str:
    return user.get_username() if user is not None else "system"


def object_delete_request(
    *, kind: Kind, obj: Any, user: User | None, durable: bool = True
) -> DeletionPlan:
    """What the delete buttons call: delete `obj` now (object_delete) when at most
    settings.DELETE_INLINE_MAX_ROWS rows go, else hand it to a worker and return a
    plan with `background` set and nothing counted.

    Steps, for a large one: count up to the limit (a COUNT of a LIMIT per table,
    milliseconds even for a million rows); in one transaction, lock and check it as
    the deletion will (ConflictError now rather than from the worker), mark it
    `deleting` and archived, and send the task once that commits."""
    if KIND_INFO[kind].background and not getattr(obj, "deleting", False):
        cascade = deletion_plan(kind=kind, obj=obj, count=False).cascade
        assert cascade is not None
        if cascade.exceeds(settings.DELETE_INLINE_MAX_ROWS):
            return _object_delete_later(kind=kind, obj=obj, user=user, durable=durable)
    return object_delete(kind=kind, obj=obj, user=user, durable=durable)


def _object_delete_later(
    *, kind: Kind, obj: Any, user: User | None, durable: bool
) -> DeletionPlan:
    with transaction.atomic(durable=durable):
        locked = _lock(kind, obj)
        plan = deletion_plan(kind=kind, obj=locked, count=False)
        if plan.blockers:
            raise ConflictError(" ".join(plan.blockers))
        # An update, not save(): the row's other fields are not this service's.
        type(locked)._default_manager.filter(pk=locked.pk).update(
            deleting=True, archived=True
        )
        task_send_on_commit(
            OBJECT_DELETE_TASK,
            kind,
            locked.pk,
            user.pk if user is not None else None,
            locked.archived,
        )
    plan.background = True
    return plan


def object_delete_marked(
    *,
    kind: Kind,
    pk: int,
    user_id: int | None,
    archived: bool,
    may_retry: bool = False,
) -> DeletionPlan | None:
    """The worker's half of a large deletion: delete the object marked `deleting`
    as object_delete does (the same audit event and counts). None when there is
    nothing to do: it is gone (a task run again) or no longer marked (a deletion
    that failed). If the deletion fails, nothing of it is left (one transaction):
    the mark is cleared, `archived` set back to `archived` (what it was before)
    and the failure recorded in the audit log; but on an OperationalError (the
    database connection) with `may_retry`, the task tries again and the mark
    stays."""
    model = KIND_INFO[kind].model
    obj: Any = (
        model._default_manager.select_related("project")
        .filter(pk=pk, deleting=True)
        .first()
    )
    if obj is None:
        return None
    user = User.objects.filter(pk=user_id).first() if user_id is not None else None
    try:
        return object_delete(kind=kind, obj=obj, user=user, marked=True)
    except ApplicationError as exc:
        # What stops it now (a run started on the dataset before it was marked):
        # the object stays, as the user will see.
        _object_delete_failed(
            kind=kind, obj=obj, user=user, archived=archived, reason=exc.message
        )
        return None
    except Exception as exc:
        if may_retry and isinstance(exc, OperationalError):
            raise
        # Anything else (a database error, the soft time limit) rolled the deletion
        # back too: clear the mark so the object is not left hidden and locked
        # against new work, then let Celery log the error.
        _object_delete_failed(
            kind=kind,
            obj=obj,
            user=user,
            archived=archived,
            reason=f"an internal error ({type(exc).__name__})",
        )
        raise


def _object_delete_failed(
    *, kind: Kind, obj: Any, user: User | None, archived: bool, reason: str
) -> None:
    """Clear the mark of a deletion that failed and record it, once: a conditional
    update, so that a second worker (or a deletion that did go) records nothing."""
    noun = KIND_INFO[kind].noun
    with transaction.atomic(durable=True):
        cleared = (
            type(obj)
            ._default_manager.filter(pk=obj.pk, deleting=True)
            .update(deleting=False, archived=archived)
        )
        if not cleared:
            return
        name = object_label(kind, obj)
        logger.warning("Deleting %s #%s failed: %s", noun, obj.pk, reason)
        audit_event(
            project=obj.project,
            actor=user,
            action=f"{noun}.delete_failed",
            summary=f"Deleting {noun} “{name}” (#{obj.pk}) failed: {reason}. "
            "It is back as it was.",
            run=obj if kind == "runs" else None,
            object_type=noun,
            object_id=obj.pk,
            object_label=name,
            after={"reason": reason},
        )
