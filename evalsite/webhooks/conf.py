"""Delivery settings, read when used (tests override them)."""

from __future__ import annotations

from django.conf import settings


def max_attempts() -> int:
    return max(1, int(settings.WEBHOOK_MAX_ATTEMPTS))


def timeout_seconds() -> float:
    return float(settings.WEBHOOK_TIMEOUT_SECONDS)


def backoff_seconds(retries: int) -> int:
    """Wait before retry number `retries` + 1: 30 s, 1 min, 2 min, ... at most 30 min,
    below the Redis broker's visibility timeout (1 h), past which a waiting message
    would be delivered twice."""
    return int(min(1800, 30 * 2**retries))
