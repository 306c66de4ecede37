"""Reads of the audit log of a run or a result (the log itself is accounts')."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result, Run


def audit_list_for_run(*, run: Run, action: str = "") -> QuerySet[AuditEvent]:
    """The run's events, newest first, each with `item_index`: the index of the item
    its result judged (None when it names no result, or the result is gone)."""
    item_index = Result.objects.filter(pk=OuterRef("result_id")).values("item__index")
    qs = (
        AuditEvent.objects.filter(project_id=run.project_id, run_id=run.pk)
        .select_related("actor")
        .annotate(item_index=Subquery(item_index[:1]))
    )
    if action:
        qs = qs.filter(action=action)
    return qs.order_by("-created_at", "-id")


def audit_actions_for_run(*, run: Run) -> list[str]:
    return list(
        AuditEvent.objects.filter(project_id=run.project_id, run_id=run.pk)
        .order_by("action")
        .values_list("action", flat=True)
        .distinct()
    )


def audit_list_for_result(*, result: Result) -> QuerySet[AuditEvent]:
    return (
        AuditEvent.objects.filter(run_id=result.run_id, result_id=result.pk)
        .select_related("actor")
        .order_by("-created_at", "-id")
    )
