"""Pieces the bench modules share: RSS sampling, latency rows, scratch project and data.

Not a bench itself (bench/__main__.py runs only bench/bench_*.py). Everything that touches
Django imports it inside the function, so this module can be imported before setup.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# The offline judge ---------------------------------------------------------------------


def start_offline_judge(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    """The offline judge in its own process, on a free port: (process, base URL).

    Its own process, as a hosted endpoint would be: in the bench's process it would
    share the bench's GIL, and pause with the bench's garbage collections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scoring.offline_judge",
            "--port",
            str(port),
            "--latency-ms",
            str(latency_ms),
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    process.stderr.readline()  # "offline judge listening on ..."
    return process, f"http://127.0.0.1:{port}/v1"


def stop_process(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# Process memory ----------------------------------------------------------------------


def rss_bytes() -> int:
    """The process's resident set size now, from /proc/self/statm."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples RSS every 10 ms in a thread while the main thread works; `.peak` in bytes."""

    def __init__(self) -> None:
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            time.sleep(0.01)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())


# Timing ------------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    """The nearest-rank q-quantile (0 ≤ q ≤ 1) of samples."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_ms(response: Any) -> float:
    """The app's own time for a request, from its Server-Timing header (every
    middleware included; the test client's building and parsing excluded)."""
    name, _, duration = response["Server-Timing"].partition(";dur=")
    if name != "app":
        raise RuntimeError(f"unexpected Server-Timing {response['Server-Timing']!r}")
    return float(duration)


def time_get(
    client: Any, url: str, headers: dict[str, str], repeat: int
) -> list[float]:
    """Server milliseconds of `repeat` GETs of url after one warm-up GET; raises
    unless 200."""
    client.get(url, headers=headers)  # warm caches (templates, query plans)
    samples = []
    for _ in range(repeat):
        response = client.get(url, headers=headers)
        samples.append(server_ms(response))
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
    return samples


def latency_rows(
    section: str, name: str, samples: list[float], target_ms: float
) -> list[dict]:
    """Two result rows: p50 (no target) and p95 (target ≤ target_ms), in ms."""
    p95 = percentile(samples, 0.95)
    return [
        {
            "section": section,
            "name": f"{name} p50",
            "value": statistics.median(samples),
            "unit": "ms",
            "target": None,
            "ok": None,
        },
        {
            "section": section,
            "name": f"{name} p95",
            "value": p95,
            "unit": "ms",
            "target": f"≤ {target_ms:g}",
            "ok": p95 <= target_ms,
        },
    ]


def setup_row(section: str, seconds: float) -> dict:
    """The row reporting how long building (or reusing) the bench data took."""
    return {
        "section": section,
        "name": "setup (build or reuse 100k results)",
        "value": seconds,
        "unit": "s",
        "target": None,
        "ok": None,
    }


def settle_database() -> None:
    """Postgres: VACUUM ANALYZE and CHECKPOINT, so what came before (earlier benches'
    dead rows and stale statistics, unflushed writes) is cleaned up now rather than by
    autovacuum or a checkpoint during the timed part. A no-op on SQLite."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("CHECKPOINT")


# Scratch project and data -------------------------------------------------------------


def allow_testserver() -> None:
    """Let the Django test client's host through ALLOWED_HOSTS."""
    from django.conf import settings

    if "testserver" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]


def bench_member(name: str, role: str) -> tuple[Any, Any]:
    """The user and project both called `name` (made once), the user a member as role."""
    from django.contrib.auth import get_user_model

    from evalsite.accounts.models import Membership, Project

    user, _ = get_user_model().objects.get_or_create(username=name)
    project, _ = Project.objects.get_or_create(name=name)
    Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return user, project


def reusable_run(
    project: Any, dataset_name: str, n_results: int, **filters: Any
) -> Any | None:
    """The latest run of the project on dataset_name if it holds all n_results, else None."""
    from evalsite.evals.models import Run

    run = (
        Run.objects.filter(project=project, dataset__name=dataset_name, **filters)
        .order_by("-id")
        .first()
    )
    if run is not None and run.results.count() == n_results:
        return run
    return None


def replace_dataset(
    project: Any,
    name: str,
    n_items: int,
    batch: int,
    item_fields: Callable[[int], dict[str, Any]],
    **dataset_fields: Any,
) -> Any:
    """Deletes the project's dataset `name` and creates it again with n_items items.

    Item i gets `item_fields(i)`; the items are inserted `batch` at a time.
    """
    from evalsite.datasets.models import Dataset, Item

    Dataset.objects.filter(project=project, name=name).delete()
    dataset = Dataset.objects.create(
        project=project, name=name, item_count=n_items, **dataset_fields
    )
    for start in range(0, n_items, batch):
        Item.objects.bulk_create(
            Item(dataset=dataset, index=i, **item_fields(i))
            for i in range(start, min(start + batch, n_items))
        )
    return dataset


def create_scorers(run: Any, names_kinds: Iterable[tuple[str, str]]) -> list[Any]:
    """A RunScorer per (name, kind), with default options, positioned in order."""
    from evalsite.evals.models import RunScorer

    return [
        RunScorer.objects.create(run=run, name=name, kind=kind, position=pos)
        for pos, (name, kind) in enumerate(names_kinds)
    ]
