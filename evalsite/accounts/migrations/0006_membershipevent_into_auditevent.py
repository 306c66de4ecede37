"""Fold the access log into the audit log: each MembershipEvent becomes an audit event
naming a membership (its actor, subject, action, before/after and time kept), and
the events the log already holds get the object type their action names."""

from __future__ import annotations

from typing import Any

from django.db import migrations

MEMBERSHIP = "membership"

# The membership actions' words as of this migration (MembershipAction's labels).
_LABELS = {
    "member_added": "added",
    "role_changed": "changed the role of",
    "member_removed": "removed",
    "invited": "created an invitation",
    "invitation_accepted": "joined through an invitation",
    "invitation_revoked": "revoked an invitation",
    "user_created": "created the user",
}


def _summary(event: Any) -> str:
    actor = event.actor.username if event.actor_id else "system"
    words = _LABELS.get(event.action, event.action)
    subject = f" {event.subject.username}" if event.subject_id else ""
    return f"{actor} {words}{subject}"[:500]


def forwards(apps: Any, schema_editor: Any) -> None:
    AuditEvent = apps.get_model("accounts", "AuditEvent")
    MembershipEvent = apps.get_model("accounts", "MembershipEvent")
    # The review events: what they name is the first word of their action.
    for action in (
        AuditEvent.objects.filter(object_type="")
        .values_list("action", flat=True)
        .distinct()
        .order_by()
    ):
        AuditEvent.objects.filter(object_type="", action=action).update(
            object_type=action.split(".", 1)[0][:40]
        )
    old_events = MembershipEvent.objects.select_related("actor", "subject").order_by(
        "created_at", "id"
    )
    for old in old_events.iterator(chunk_size=500):
        new = AuditEvent.objects.create(
            project_id=old.project_id,
            actor_id=old.actor_id,
            subject_id=old.subject_id,
            action=old.action,
            object_type=MEMBERSHIP,
            object_id=old.subject_id,
            object_label=old.subject.username if old.subject_id else "",
            summary=_summary(old),
            before=old.before,
            after=old.after,
        )
        # created_at is auto_now_add: only an update keeps the event's own time.
        AuditEvent.objects.filter(pk=new.pk).update(created_at=old.created_at)
    MembershipEvent.objects.all().delete()


def backwards(apps: Any, schema_editor: Any) -> None:
    AuditEvent = apps.get_model("accounts", "AuditEvent")
    MembershipEvent = apps.get_model("accounts", "MembershipEvent")
    events = AuditEvent.objects.filter(object_type=MEMBERSHIP).order_by(
        "created_at", "id"
    )
    for event in events.iterator(chunk_size=500):
        old = MembershipEvent.objects.create(
            project_id=event.project_id,
            actor_id=event.actor_id,
            subject_id=event.subject_id,
            action=event.action,
            before=event.before,
            after=event.after,
        )
        MembershipEvent.objects.filter(pk=old.pk).update(created_at=event.created_at)
    events.delete()


class Migration(migrations.Migration):
    dependencies = [("accounts", "0005_auditevent")]

    operations = [migrations.RunPython(forwards, backwards)]
