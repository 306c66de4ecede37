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
import time
from typing import Any

from bench._common import (
    PeakRss,
    allow_testserver,
    bench_member,
    create_scorers,
    replace_dataset,
    reusable_run,
    rss_bytes,
    setup_row,
)

N_ITEMS = 50_000
N_SCORERS = 2
N_NOTES = 2_000
TARGET_SECONDS = 10.0
TARGET_MB = 100.0
BATCH = 5_000
DATASET_NAME = "bench-export-100k"


def _item_fields(i: int) -> dict[str, Any]:
    return {
        "input": f"Question {i}: what does the report say about revenue in region {i % 17}?",
        "output": f"Revenue in region {i % 17} grew by {i % 9} percent, driven by new customers.",
        "context": [
            f"The annual report states revenue in region {i % 17} grew {i % 9}%.",
            "New customer acquisition was the main driver of growth.",
        ],
        "reference": f"Grew {i % 9}%",
        "metadata": {"topic": "finance", "source": f"report-{i % 100}"},
    }


def _build() -> tuple[Any, Any]:
    """The bench run (built once) and a member to export it as."""
    from django.db import transaction

    from evalsite.accounts.models import Role
    from evalsite.evals.models import Result, Run
    from evalsite.review.models import Override

    user, project = bench_member("bench-export", Role.VIEWER)
    run = reusable_run(
        project, DATASET_NAME, N_ITEMS * N_SCORERS, total=N_ITEMS * N_SCORERS
    )
    if run is not None:
        return run, user
    with transaction.atomic():
        dataset = replace_dataset(
            project,
            DATASET_NAME,
            N_ITEMS,
            BATCH,
            _item_fields,
            file_format="csv",
            columns=["input", "output", "context", "reference", "topic", "source"],
        )
        run = Run.objects.create(
            project=project, dataset=dataset, status="done", total=N_ITEMS * N_SCORERS
        )
        scorers = create_scorers(
            run, [("Faithfulness", "faithfulness"), ("Hallucination", "hallucination")]
        )
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
    baseline = rss_bytes()
    with PeakRss() as peak, open(os.devnull, "wb") as sink:
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
    from django.test import Client

    allow_testserver()
    setup_started = time.perf_counter()
    bench_run, user = _build()
    setup_seconds = time.perf_counter() - setup_started
    client = Client()
    client.force_login(user)
    rows: list[dict] = [setup_row("export", setup_seconds)]
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
