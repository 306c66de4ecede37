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


def dispatchers_per_run() -> int:
    """How many dispatch tasks work one run at once (each holds many calls in flight;
    more spread a run's CPU over more worker processes and machines)."""
    return max(1, int(_number("EVALS_DISPATCHERS_PER_RUN", 2)))


def dispatch_seconds() -> float:
    """How long one dispatch task works a run before it sends the next one to the back
    of the queue (so a run started later is not kept waiting for a free slot)."""
    return max(1.0, _number("EVALS_DISPATCH_SECONDS", 60))


def judge_outage_seconds() -> float:
    """How long a judge may be unreachable (connection errors, 502/503/504) before a
    run fails the results waiting for it; until then the connection pauses and retries."""
    return max(0.0, _number("JUDGE_OUTAGE_SECONDS", 300))
