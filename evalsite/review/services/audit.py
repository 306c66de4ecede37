"""The review audit log: every review write records one event in its transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User

from evalsite.accounts.models import Project
from evalsite.evals.models import Result, Run
from evalsite.review.models import AuditEvent


def audit_record(
    *,
    project: Project,
    actor: User | None,
    action: str,
    summary: str,
    before: Any = None,
    after: Any = None,
    run: Run | None = None,
    result: Result | None = None,
) -> AuditEvent:
    """Append one audit event; call it inside the transaction that makes the change."""
    return AuditEvent.objects.create(
        project=project,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        summary=summary[:500],
        before=before,
        after=after,
        run=run,
        result=result,
    )


def audit_event(
    *,
    project: Project,
    actor: User | None,
    action: str,
    summary: str,
    before: Any = None,
    after: Any = None,
    run: Run | None = None,
    result: Result | None = None,
) -> AuditEvent:
    """The event `audit_record` would append, unsaved: for `audit_record_many`."""
    return AuditEvent(
        project=project,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        summary=summary[:500],
        before=before,
        after=after,
        run=run,
        result=result,
    )


def audit_record_many(events: Sequence[AuditEvent]) -> list[AuditEvent]:
    """Append several events (from `audit_event`) in one INSERT, in the given order;
    call it inside the transaction that makes the change."""
    return AuditEvent.objects.bulk_create(events)
