"""review 0015 + accounts 0005-0007: the audit log moves to accounts with its rows,
the access log folds into it, and both survive the way back."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evalsite.accounts.models import MEMBERSHIP_OBJECT, AuditEvent
from evalsite.evals.models import Run
from tests.factories import ProjectFactory, ResultFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("accounts", "0004_invitation_invitee"),
    ("review", "0014_queue_filters_run_scorer"),
]
WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _migrate(targets: list[tuple[str, str]] | None = None):
    """Migrate to `targets` (None: the latest) and return the apps of that state."""
    executor = MigrationExecutor(connection)
    targets = targets or executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def test_round_trip_keeps_every_event():
    owner, member = UserFactory(username="olga"), UserFactory(username="max")
    result = ResultFactory()
    run = result.run
    project = run.project
    elsewhere = ProjectFactory()
    try:
        old = _migrate(BEFORE)
        OldAudit = old.get_model("review", "AuditEvent")
        OldMembership = old.get_model("accounts", "MembershipEvent")
        review_event = OldAudit.objects.create(
            project_id=project.pk,
            run_id=run.pk,
            result_id=result.pk,
            actor_id=owner.pk,
            action="override.create",
            summary="olga flipped pass",
            before={"passed": True},
            after={"passed": False},
        )
        OldAudit.objects.filter(pk=review_event.pk).update(created_at=WHEN)
        access = OldMembership.objects.create(
            project_id=project.pk,
            actor_id=owner.pk,
            subject_id=member.pk,
            action="role_changed",
            before={"role": "viewer"},
            after={"role": "reviewer"},
        )
        OldMembership.objects.filter(pk=access.pk).update(created_at=WHEN)
        OldMembership.objects.create(
            project_id=elsewhere.pk, action="member_added", after={"role": "owner"}
        )

        _migrate()
        kept = AuditEvent.objects.get(pk=review_event.pk)
        assert (kept.run_id, kept.result_id, kept.actor_id) == (
            run.pk,
            result.pk,
            owner.pk,
        )
        assert (kept.action, kept.object_type, kept.summary) == (
            "override.create",
            "override",
            "olga flipped pass",
        )
        assert (kept.before, kept.after, kept.created_at) == (
            {"passed": True},
            {"passed": False},
            WHEN,
        )
        folded = AuditEvent.objects.get(project=project, object_type=MEMBERSHIP_OBJECT)
        assert (folded.actor_id, folded.subject_id, folded.action) == (
            owner.pk,
            member.pk,
            "role_changed",
        )
        assert (folded.before, folded.after, folded.created_at) == (
            {"role": "viewer"},
            {"role": "reviewer"},
            WHEN,
        )
        assert folded.summary == "olga changed the role of max"
        assert AuditEvent.objects.filter(project=elsewhere).count() == 1

        # The event outlives its run; the way back drops only the dangling reference.
        Run.objects.filter(pk=run.pk).delete()
        assert AuditEvent.objects.get(pk=review_event.pk).run_id == run.pk

        old = _migrate(BEFORE)
        back = old.get_model("review", "AuditEvent").objects.get(pk=review_event.pk)
        assert (back.run_id, back.result_id, back.summary, back.created_at) == (
            None,
            None,
            "olga flipped pass",
            WHEN,
        )
        OldMembership = old.get_model("accounts", "MembershipEvent")
        restored = OldMembership.objects.get(project_id=project.pk)
        assert (restored.subject_id, restored.action, restored.after) == (
            member.pk,
            "role_changed",
            {"role": "reviewer"},
        )
        assert restored.created_at == WHEN
        assert OldMembership.objects.count() == 2
        assert old.get_model("review", "AuditEvent").objects.count() == 1
    finally:
        _migrate()
    assert AuditEvent.objects.filter(object_type=MEMBERSHIP_OBJECT).count() == 2
