"""Batch writes of results' review fields, for review's bulk actions and queues (evals
is the only writer of results). The caller holds the rows' locks, taken in id order,
and writes the audit events; each write bumps the rows' versions, so a stale form
cannot undo it."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import F

from evalsite.evals.models import Result


def results_mark_accepted(
    *, result_ids: Collection[int], user: User, now: datetime
) -> None:
    """Mark the results reviewed by `user`, the human agreeing with the final pass."""
    Result.objects.filter(pk__in=result_ids).update(
        reviewed=True,
        reviewed_by=user,
        reviewed_at=now,
        human_passed=F("final_passed"),
        version=F("version") + 1,
        updated_at=now,
    )


def results_assign(
    *, result_ids: Collection[int], assignee: User | None, now: datetime
) -> None:
    """Give the results to `assignee` (None: unassign)."""
    Result.objects.filter(pk__in=result_ids).update(
        assignee=assignee, updated_at=now, version=F("version") + 1
    )
