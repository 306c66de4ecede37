"""The project's one audit log: every service that changes something a team cares
about (runs, judge connections, scorers, datasets, memberships, reviews) records one
event with `audit_event`, inside the transaction of the change, so the change and its
record commit or roll back together."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from django.contrib.auth.models import AnonymousUser, User

from evalsite.accounts.models import AuditEvent, Project

SUMMARY_MAX_LENGTH = 500
LABEL_MAX_LENGTH = 200


class _HasPk(Protocol):
    @property
    def pk(self) -> Any: ...


def audit_event(
    *,
    project: Project,
    actor: User | AnonymousUser | None,
    action: str,
    summary: str,
    before: Any = None,
    after: Any = None,
    run: _HasPk | None = None,
    result: _HasPk | None = None,
    subject: User | None = None,
    object_type: str = "",
    object_id: int | None = None,
    object_label: str = "",
    save: bool = True,
) -> AuditEvent:
    """Record one event: `action` is "<object type>.<verb>" ("run.cancel",
    "judge.change"); the object type defaults to the action's first word. `run` and
    `result` are kept by id only, so the event outlives them; `object_label` keeps the
    object's name for when it is gone. Never pass a secret in `before`/`after` or the
    summary: the log is shown to every member and exported.

    With `save=False` the event is returned unsaved, for `audit_events_save`."""
    event = AuditEvent(
        project=project,
        actor=actor if isinstance(actor, User) else None,
        subject=subject,
        action=action,
        object_type=(object_type or action.split(".", 1)[0])[:40],
        object_id=object_id,
        object_label=object_label[:LABEL_MAX_LENGTH],
        run_id=run.pk if run is not None else None,
        result_id=result.pk if result is not None else None,
        summary=summary[:SUMMARY_MAX_LENGTH],
        before=before,
        after=after,
    )
    if save:
        event.save()
    return event


def audit_events_save(events: Iterable[AuditEvent]) -> list[AuditEvent]:
    """Record several events (from `audit_event(..., save=False)`) in one INSERT, in
    the given order; call it inside the transaction of the change."""
    return AuditEvent.objects.bulk_create(list(events))
