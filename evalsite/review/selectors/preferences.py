"""A reviewer's own settings for the review screens (shortcut keys, advancing)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from evalsite.accounts.models import ReviewerPreferences


def reviewer_preferences(user: User | AnonymousUser) -> ReviewerPreferences:
    """The user's preferences, or the defaults (an unsaved row) when they never saved
    any: single-key shortcuts on, and accept/pass/fail moving to the next item."""
    if not user.is_authenticated:
        return ReviewerPreferences()
    found = ReviewerPreferences.objects.filter(user=user).first()
    return found if found is not None else ReviewerPreferences(user=user)
