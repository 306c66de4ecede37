"""Live figures of a running run, published by its dispatchers for the run page.

Each dispatcher publishes its own snapshot about twice a second, under its claim token:
a Redis hash per run (REDIS_URL set), else one small file per dispatcher under VAR_DIR.
A reader adds them up: the counts over every dispatcher that ever worked the run, the
rates, calls in flight and judge latencies only over those heard from in the last few
seconds (a killed worker's last snapshot must not count as in flight forever).

Calls in flight are the judge's own seconds per second over the last few seconds (the
mean number of calls the judge is working on, Little's law), not a count of the
worker's open requests, which also holds replies waiting for a busy event loop.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from evalsite.evals.engine.limiter import redis_client

FRESH_SECONDS = 3.0
_KEEP_SECONDS = 7 * 24 * 3600


@dataclass
class Snapshot:
    in_flight: float = 0.0  # mean calls the judge is working on, lately
    calls: int = 0
    calls_per_second: float = 0.0
    throttled: int = 0  # 429 answers
    server_errors: int = 0  # 5xx answers
    # judge connection id -> [the judge's own seconds, requests], lately.
    judge_latency: dict[str, list[float]] = field(default_factory=dict)
    # Since when (epoch seconds) the judge could not be reached, 0 when it answers; and
    # how long an outage may last before results fail (JUDGE_OUTAGE_SECONDS).
    unreachable_since: float = 0.0
    outage_seconds: float = 0.0

    def unreachable_for(self, now: float | None = None) -> float | None:
        """Seconds the judge has been unreachable, or None when it answers."""
        if not self.unreachable_since:
            return None
        return max(0.0, (time.time() if now is None else now) - self.unreachable_since)

    def latency_ms(self, judge_id: int) -> float | None:
        """The judge connection's mean latency lately (ms), if any call ended."""
        seconds, requests = self.judge_latency.get(str(judge_id), [0.0, 0])
        return 1000 * seconds / requests if requests else None


def _key(run_id: int) -> str:
    return f"evalsite:runlive:{run_id}"


def _dir(run_id: int) -> Path:
    return Path(settings.VAR_DIR) / "runlive" / str(int(run_id))


def publish(*, run_id: int, token: str, snapshot: Snapshot) -> None:
    data = json.dumps({**asdict(snapshot), "at": time.time()})
    if settings.REDIS_URL:
        client = redis_client()
        pipe = client.pipeline()
        pipe.hset(_key(run_id), token, data)
        pipe.expire(_key(run_id), _KEEP_SECONDS)
        pipe.execute()
        return
    folder = _dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", token)[:120] + ".json"
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(data)
    os.replace(tmp, folder / name)


def _published(run_id: int) -> list[dict[str, Any]]:
    if settings.REDIS_URL:
        raw = redis_client().hvals(_key(run_id))
    else:
        folder = _dir(run_id)
        raw = []
        if folder.is_dir():
            for path in folder.glob("*.json"):
                try:
                    raw.append(path.read_text())
                except OSError:
                    continue
    snapshots = []
    for value in raw:
        try:
            data = json.loads(value)
        except ValueError:
            continue
        if isinstance(data, dict):
            snapshots.append(data)
    return snapshots


def run_live(*, run_id: int) -> Snapshot:
    """The run's live figures, summed over its dispatchers."""
    total = Snapshot()
    now = time.time()
    for data in _published(run_id):
        total.calls += int(data.get("calls", 0))
        total.throttled += int(data.get("throttled", 0))
        total.server_errors += int(data.get("server_errors", 0))
        if now - float(data.get("at", 0)) <= FRESH_SECONDS:
            total.in_flight += float(data.get("in_flight", 0))
            total.calls_per_second += float(data.get("calls_per_second", 0.0))
            try:
                since = float(data.get("unreachable_since") or 0.0)
                outage = float(data.get("outage_seconds") or 0.0)
            except (TypeError, ValueError):
                since = outage = 0.0
            if since and (
                not total.unreachable_since or since < total.unreachable_since
            ):
                total.unreachable_since = since
            total.outage_seconds = max(total.outage_seconds, outage)
            latency = data.get("judge_latency")
            for judge_id, pair in (
                latency if isinstance(latency, dict) else {}
            ).items():
                try:
                    seconds, requests = float(pair[0]), int(pair[1])
                except (TypeError, ValueError, IndexError):
                    continue
                summed = total.judge_latency.setdefault(str(judge_id), [0.0, 0])
                summed[0] += seconds
                summed[1] += requests
    total.in_flight = round(total.in_flight, 1)
    total.calls_per_second = round(total.calls_per_second, 1)
    return total
