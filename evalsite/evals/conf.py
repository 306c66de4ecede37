"""Tunables of the run machinery, from settings when the lead adds them, else the env."""

from __future__ import annotations

import os

from django.conf import settings


def _number(name: str, default: float) -> float:
    value = getattr(settings, name, None)
    if value is None:
        return float(os.environ.get(name, default))
    return float(value)


def lease_seconds() -> float:
    """How long a claimed result stays claimed without a heartbeat (dead-worker takeover)."""
    return _number("EVALS_RESULT_LEASE_SECONDS", 60)


def monitor_interval() -> float:
    """How often the watchdog of a running run looks for lost work."""
    return max(1.0, _number("EVALS_MONITOR_INTERVAL_SECONDS", lease_seconds() / 2))


def chunk_size() -> int:
    """How many result tasks one fan-out chunk task enqueues."""
    return int(_number("EVALS_FANOUT_CHUNK", 500))
