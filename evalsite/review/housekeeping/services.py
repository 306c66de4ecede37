"""Archive, unarchive and delete, for every kind the housekeeping pages handle.

Archiving is each app's own service; deleting is here: it locks what it deletes,
checks again in its transaction what could stop it, deletes exactly the rows the
confirmation page counted, by Django's on_delete rules, a table at a time
(evalsite.lib.cascade), and records one audit event with the counts of everything
that went."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q

from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ConflictError
from evalsite.datasets.services import dataset_set_archived
from evalsite.evals.judges.services import judge_set_archived
from evalsite.evals.models import Run, ScorerConfig
from evalsite.evals.runs.services import run_set_archived
from evalsite.evals.scorers.services import scorer_set_archived
from evalsite.lib.cascade import cascade_delete
from evalsite.review.housekeeping.selectors import (
    KIND_INFO,
    DeletionPlan,
    Kind,
    deletion_plan,
    scorer_lineage,
)
from evalsite.review.queues.services import queue_set_archived


def object_set_archived(*, kind: Kind, obj: Any, user: User, archived: bool) -> Any:
    """Archive or unarchive `obj` through its own app's service (audited there)."""
    if kind == "runs":
        return run_set_archived(run=obj, user=user, archived=archived)
    if kind == "datasets":
        return dataset_set_archived(dataset=obj, user=user, archived=archived)
    if kind == "scorers":
        return scorer_set_archived(scorer=obj, user=user, archived=archived)
    if kind == "judges":
        return judge_set_archived(judge=obj, user=user, archived=archived)
    return queue_set_archived(queue=obj, user=user, archived=archived)


def _lock(kind: Kind, obj: Any) -> Any:
    """Lock the rows the deletion removes or depends on, so that no run starts on
    them and no queue is made from them until it commits (their inserts wait on
    these locks, then find the rows gone)."""
    model = KIND_INFO[kind].model
    locked: Any = model._default_manager.select_for_update().filter(pk=obj.pk).first()
    if locked is None:
        raise ConflictError(f"This {KIND_INFO[kind].noun} was deleted already.")
    if kind == "datasets":
        list(Run.objects.select_for_update().filter(dataset=locked))
    elif kind == "judges":
        list(ScorerConfig.objects.select_for_update().filter(judge=locked))
    elif kind == "scorers":
        ids = [s.pk for s in scorer_lineage(locked)]
        list(ScorerConfig.objects.select_for_update().filter(pk__in=ids))
    locked.project = obj.project
    return locked


def object_delete(*, kind: Kind, obj: Any, user: User) -> DeletionPlan:
    """Delete `obj` and everything its plan names, in one transaction, audited.
    Raises ConflictError (nothing deleted) when a queued or running run or an open
    queue needs it."""
    with transaction.atomic(durable=True):
        locked = _lock(kind, obj)
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
            summary=f"{user.get_username()} deleted {noun} “{plan.name}” (#{locked.pk}): {parts}",
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
