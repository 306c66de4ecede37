"""Reads of the audit log of a run or a result."""

from __future__ import annotations

from django.db.models import QuerySet

from evalsite.evals.models import Result, Run
from evalsite.review.models import AuditEvent


def audit_list_for_run(*, run: Run, action: str = "") -> QuerySet[AuditEvent]:
    qs = AuditEvent.objects.filter(run=run).select_related("actor", "result__item")
    if action:
        qs = qs.filter(action=action)
    return qs.order_by("-created_at", "-id")


def audit_actions_for_run(*, run: Run) -> list[str]:
    return list(
        AuditEvent.objects.filter(run=run)
        .order_by("action")
        .values_list("action", flat=True)
        .distinct()
    )


def audit_list_for_result(*, result: Result) -> QuerySet[AuditEvent]:
    return (
        AuditEvent.objects.filter(result=result)
        .select_related("actor")
        .order_by("-created_at", "-id")
    )
