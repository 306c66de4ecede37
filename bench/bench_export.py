"""Export of a 100k-result run (50k items × 2 scorers) as CSV and JSONL (section "export").

Streams the real page response (Django test client, logged-in viewer) to /dev/null while a
thread samples the process RSS; reports wall time and peak RSS growth over the baseline
taken just before the request. Runs on the configured database (`make bench` gives it a
scratch one); the data is built once and reused by later runs.

Run alone: `python -m bench bench_export`. Targets: ≤ 10 s, ≤ 100 MB growth.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any

N_ITEMS = 50_000
N_SCORERS = 2
N_NOTES = 2_000
TARGET_SECONDS = 10.0
TARGET_MB = 100.0
BATCH = 5_000
DATASET_NAME = "bench-export-100k"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PeakRss:
    """Samples RSS every 10 ms in a thread (the response is consumed in the main thread)."""

    def __init__(self) -> None:
        self.peak = _rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(0.01)

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


def _build() -> tuple[Any, Any]:
    """The bench run (built once) and a member to export it as."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from evalsite.accounts.models import Membership, Project, Role
    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals.models import Result, Run, RunScorer
    from evalsite.review.models import Override

    user, _ = get_user_model().objects.get_or_create(username="bench-export")
    project, _ = Project.objects.get_or_create(name="bench-export")
    Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": Role.VIEWER}
    )
    run = (
        Run.objects.filter(
            project=project, dataset__name=DATASET_NAME, total=N_ITEMS * N_SCORERS
        )
        .order_by("-id")
        .first()
    )
    if run is not None and run.results.count() == N_ITEMS * N_SCORERS:
        return run, user
    with transaction.atomic():
        Dataset.objects.filter(project=project, name=DATASET_NAME).delete()
        dataset = Dataset.objects.create(
            project=project,
            name=DATASET_NAME,
            file_format="csv",
            columns=["input", "output", "context", "reference", "topic", "source"],
            item_count=N_ITEMS,
        )
        for start in range(0, N_ITEMS, BATCH):
            Item.objects.bulk_create(
                Item(
                    dataset=dataset,
                    index=i,
                    input=f"Question {i}: what does the report say about revenue in region {i % 17}?",
                    output=f"Revenue in region {i % 17} grew by {i % 9} percent, driven by new customers.",
                    context=[
                        f"The annual report states revenue in region {i % 17} grew {i % 9}%.",
                        "New customer acquisition was the main driver of growth.",
                    ],
                    reference=f"Grew {i % 9}%",
                    metadata={"topic": "finance", "source": f"report-{i % 100}"},
                )
                for i in range(start, min(start + BATCH, N_ITEMS))
            )
        run = Run.objects.create(
            project=project, dataset=dataset, status="done", total=N_ITEMS * N_SCORERS
        )
        scorers = [
            RunScorer.objects.create(run=run, name=name, kind=kind, position=pos)
            for pos, (name, kind) in enumerate(
                [("Faithfulness", "faithfulness"), ("Hallucination", "hallucination")]
            )
        ]
        item_ids = list(dataset.items.order_by("index").values_list("id", flat=True))
        reason = (
            "3 of 4 claims are supported by the context; one claim is not mentioned."
        )
        for start in range(0, len(item_ids), BATCH // N_SCORERS):
            Result.objects.bulk_create(
                Result(
                    run=run,
                    item_id=item_id,
                    run_scorer=rs,
                    status="ok",
                    judge_score=0.75,
                    final_score=0.75,
                    judge_passed=True,
                    final_passed=True,
                    reason=reason,
                    analysis={"claims": ["a", "b", "c", "d"]},
                )
                for item_id in item_ids[start : start + BATCH // N_SCORERS]
                for rs in scorers
            )
        noted = list(run.results.order_by("id").values_list("id", flat=True)[:N_NOTES])
        Override.objects.bulk_create(
            Override(
                result_id=pk, kind="score", new_value=0.5, note="judge too generous"
            )
            for pk in noted
        )
    return run, user


def _measure(client: Any, url: str) -> tuple[float, float, int]:
    gc.collect()
    baseline = _rss_bytes()
    with _PeakRss() as peak, open(os.devnull, "wb") as sink:
        started = time.perf_counter()
        response = client.get(url)
        size = 0
        for chunk in response.streaming_content:
            sink.write(chunk)
            size += len(chunk)
        elapsed = time.perf_counter() - started
    response.close()
    return elapsed, (peak.peak - baseline) / 1e6, size


def run() -> list[dict]:
    from django.conf import settings
    from django.test import Client

    if "testserver" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    setup_started = time.perf_counter()
    bench_run, user = _build()
    setup_seconds = time.perf_counter() - setup_started
    client = Client()
    client.force_login(user)
    rows: list[dict] = [
        {
            "section": "export",
            "name": "setup (build or reuse 100k results)",
            "value": setup_seconds,
            "unit": "s",
            "target": None,
            "ok": None,
        }
    ]
    base = f"/projects/{bench_run.project_id}/runs/{bench_run.pk}"
    for label, url in (
        ("CSV", f"{base}/export.csv"),
        ("JSONL", f"{base}/export.jsonl"),
    ):
        seconds, growth_mb, size = _measure(client, url)
        rows += [
            {
                "section": "export",
                "name": f"{label} 100k results: wall time",
                "value": seconds,
                "unit": "s",
                "target": f"≤ {TARGET_SECONDS:g}",
                "ok": seconds <= TARGET_SECONDS,
            },
            {
                "section": "export",
                "name": f"{label} 100k results: peak RSS growth",
                "value": growth_mb,
                "unit": "MB",
                "target": f"≤ {TARGET_MB:g}",
                "ok": growth_mb <= TARGET_MB,
            },
            {
                "section": "export",
                "name": f"{label} 100k results: size",
                "value": size / 1e6,
                "unit": "MB",
                "target": None,
                "ok": None,
            },
        ]
    return rows
