"""Ingest of a generated 100k-row CSV through `dataset_create` (section "ingest").

The CSV (~60 MB: input, output, a JSON context of three chunks, reference and two
metadata columns) is written to a temp dir first and not measured. The ingest then runs
exactly as an upload does (the file on disk, streamed, one transaction, batched inserts)
while a thread samples the process RSS every 10 ms from /proc/self/statm; the memory figure
is the peak RSS growth over the baseline taken just before the ingest (not tracemalloc,
which would slow the ingest several-fold and miss C-level allocations).

Needs Django set up (the bench runner does it on a scratch database). Creates a scratch
project and deletes it, its dataset and items afterwards.

Run alone: `python -m bench bench_ingest`. Targets: ≤ 20 s, ≤ 300 MB growth.
"""

from __future__ import annotations

import csv
import gc
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import PeakRss, rss_bytes

N_ROWS = 100_000
TARGET_SECONDS = 20.0
TARGET_MB = 300.0

_TOPICS = ["pricing", "sync", "export", "security", "api", "billing", "storage"]


def write_csv(path: Path, rows: int = N_ROWS) -> int:
    """A realistic RAG dataset CSV; returns its size in bytes."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["input", "output", "context", "reference", "topic", "ticket"])
        for i in range(rows):
            topic = _TOPICS[i % len(_TOPICS)]
            n = i % 97
            writer.writerow(
                [
                    f"Customer {i} asks: how does {topic} work on the Plus plan, and is there a limit of {n} per month?",
                    f"On Plus, {topic} is included. The limit is {n} per month; above that, requests are queued "
                    f"and processed the next day. You can check usage in Settings > {topic.title()}.",
                    json.dumps(
                        [
                            f"Plus includes {topic} for every workspace member.",
                            f"The monthly {topic} limit on Plus is {n}; extra requests are queued until the next day.",
                            f"Usage is shown in Settings > {topic.title()} and resets on the 1st of each month.",
                        ]
                    ),
                    f"{topic.title()} is included in Plus with a limit of {n} per month.",
                    topic,
                    f"T-{100000 + i}",
                ]
            )
    return path.stat().st_size


def run() -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.core.files import File
    from django.db import connection

    from evalsite.accounts.models import Project
    from evalsite.datasets.models import Dataset, Item
    from evalsite.datasets.services import dataset_create

    user, _ = get_user_model().objects.get_or_create(username="bench-ingest")
    project = Project.objects.create(name=f"bench-ingest-{int(time.time())}")
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        path = Path(tmp) / "bench_100k.csv"
        size = write_csv(path)
        gc.collect()
        baseline = rss_bytes()
        try:
            with PeakRss() as rss, open(path, "rb") as fh:
                started = time.perf_counter()
                dataset = dataset_create(
                    project=project,
                    user=user,
                    file=File(fh, name=path.name),
                    name="bench-100k",
                )
                seconds = time.perf_counter() - started
            stored = Item.objects.filter(dataset=dataset).count()
        finally:
            # A raw DELETE: the ORM cascade would load 100k items to look for results.
            with connection.cursor() as cursor:
                cursor.execute(
                    f"DELETE FROM {Item._meta.db_table} WHERE dataset_id IN "
                    f"(SELECT id FROM {Dataset._meta.db_table} WHERE project_id = %s)",
                    [project.pk],
                )
            project.delete()
    growth_mb = (rss.peak - baseline) / (1024 * 1024)
    section = "ingest"
    return [
        {
            "section": section,
            "name": f"{N_ROWS // 1000}k-row CSV ({size / 1e6:.0f} MB) wall time",
            "value": round(seconds, 2),
            "unit": "s",
            "target": f"<= {TARGET_SECONDS:g}",
            "ok": seconds <= TARGET_SECONDS and stored == N_ROWS,
        },
        {
            "section": section,
            "name": "peak RSS growth (sampled /proc/self/statm)",
            "value": round(growth_mb, 1),
            "unit": "MB",
            "target": f"<= {TARGET_MB:g}",
            "ok": growth_mb <= TARGET_MB,
        },
        {
            "section": section,
            "name": "rows per second",
            "value": round(N_ROWS / seconds),
            "unit": "rows/s",
            "target": None,
            "ok": None,
        },
        {
            "section": section,
            "name": "items stored",
            "value": stored,
            "unit": "items",
            "target": f"== {N_ROWS}",
            "ok": stored == N_ROWS,
        },
    ]
