"""Writes for a reviewer's own settings of the review screens.

The row (accounts.ReviewerPreferences) is keyed by user, so it lives beside the user
in accounts; only the review screens read it, and this is its one writer.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from evalsite.accounts.models import ReviewerPreferences


@transaction.atomic(durable=True)
def reviewer_preferences_set(
    *, user: User, keyboard_shortcuts: bool, advance_after_answer: bool
) -> ReviewerPreferences:
    """Save the user's preferences (create the row on first save). Not audited: it
    changes nobody's data but the user's own screens."""
    preferences, _ = ReviewerPreferences.objects.update_or_create(
        user=user,
        defaults={
            "keyboard_shortcuts": keyboard_shortcuts,
            "advance_after_answer": advance_after_answer,
        },
    )
    return preferences
