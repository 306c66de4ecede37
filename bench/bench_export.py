"""Export of a 100k-result run (50k items × 2 scorers) as CSV, JSONL and Parquet
(section "export").

Streams the real page response (Django test client, logged-in viewer) to /dev/null while a
thread samples the process RSS; reports wall time and peak RSS growth over the baseline
taken just before the request. Runs on the configured database (`make bench` gives it a
scratch one); the data is built once and reused by later runs.

The run carries what the export reads per chunk besides the results: a priced judge
and a judge call per result, comments on 2,000 results, and 2,000 results answered by
two reviewers in an overlap queue (half of them adjudicated), so the per-chunk queries
are timed too.

Run alone: `python -m bench bench_export`. Targets: ≤ 10 s each; peak RSS growth
≤ 100 MB for CSV and JSONL, ≤ 150 MB for Parquet (a row group of 10,000 rows is held
as Python values and Arrow arrays while it is written).
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
    settle_database,
    setup_row,
)

N_ITEMS = 50_000
N_SCORERS = 2
N_NOTES = 2_000
TARGET_SECONDS = 10.0
TARGET_MB = 100.0
TARGET_PARQUET_MB = 150.0
N_COMMENTED = 2_000
N_ANSWERED = 2_000
BATCH = 5_000
# v2: judge calls, comments and answers; older bench data is not reused.
DATASET_NAME = "bench-export-100k-v2"


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
        _add_review_data(run, project, user, scorers)
    return run, user


def _add_review_data(run: Any, project: Any, user: Any, scorers: list[Any]) -> None:
    """A priced judge and a call per result, comments, an overlap queue's answers
    (half adjudicated): bulk inserts, as the services would leave them."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model

    from evalsite.evals.models import JudgeCall, JudgeConnection
    from evalsite.review.models import Comment, QueueEntry, Review, ReviewQueue

    judge, _ = JudgeConnection.objects.get_or_create(
        project=project,
        name="bench-judge",
        defaults={
            "base_url": "http://127.0.0.1:9/v1",
            "model": "gpt-4o-mini",
            "price_per_1k_input": Decimal("0.00015"),
            "price_per_1k_output": Decimal("0.0006"),
        },
    )
    for rs in scorers:
        rs.judge = judge
        rs.judge_snapshot = {"model": judge.model, "is_offline": False}
        rs.save(update_fields=["judge", "judge_snapshot"])
    ids = list(run.results.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        JudgeCall.objects.bulk_create(
            JudgeCall(
                result_id=pk,
                step="claims",
                messages=[{"role": "user", "content": "Extract the claims."}],
                raw_response='{"claims": ["a", "b", "c", "d"]}',
                prompt_tokens=850,
                completion_tokens=120,
                latency_ms=640.0,
                cache_hit=pk % 10 == 0,
            )
            for pk in ids[start : start + BATCH]
        )
    Comment.objects.bulk_create(
        Comment(result_id=pk, user=user, body="Check claim 2 against the report.")
        for pk in ids[:N_COMMENTED]
    )
    users = get_user_model()
    ann = users.objects.get_or_create(username="bench-export-ann")[0]
    ben = users.objects.get_or_create(username="bench-export-ben")[0]
    queue = ReviewQueue.objects.create(
        project=project, run=run, name="double check", overlap=2, final_rule="unanimous"
    )
    answered = ids[-N_ANSWERED:]
    QueueEntry.objects.bulk_create(
        QueueEntry(
            queue=queue,
            result_id=pk,
            position=n + 1,
            state="decided",
            answers=2,
            answers_pass=2,
            decision={
                "passed": True,
                "flips": {},
                "score": None,
                "how": "adjudicated" if n % 2 else "unanimous",
            },
        )
        for n, pk in enumerate(answered)
    )
    Review.objects.bulk_create(
        Review(
            queue=queue,
            result_id=pk,
            reviewer=reviewer,
            kind=kind,
            passed=True,
            note="Supported.",
            seconds=14.0,
        )
        for n, pk in enumerate(answered)
        for reviewer, kind in (
            (ann, "answer"),
            (ben, "answer"),
            *([(user, "adjudication")] if n % 2 else []),
        )
    )


def _measure(client: Any, url: str) -> tuple[float, float, float, int]:
    gc.collect()
    baseline = rss_bytes()
    with PeakRss() as peak, open(os.devnull, "wb") as sink:
        cpu_started = time.process_time()
        started = time.perf_counter()
        response = client.get(url)
        size = 0
        for chunk in response.streaming_content:
            sink.write(chunk)
            size += len(chunk)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    response.close()
    return elapsed, cpu, (peak.peak - baseline) / 1e6, size


def run() -> list[dict]:
    from django.test import Client

    allow_testserver()
    setup_started = time.perf_counter()
    bench_run, user = _build()
    setup_seconds = time.perf_counter() - setup_started
    settle_database()
    client = Client()
    client.force_login(user)
    rows: list[dict] = [setup_row("export", setup_seconds)]
    base = f"/projects/{bench_run.project_id}/runs/{bench_run.pk}"
    for label, url, target_mb in (
        ("CSV", f"{base}/export.csv", TARGET_MB),
        ("JSONL", f"{base}/export.jsonl", TARGET_MB),
        ("Parquet", f"{base}/export.parquet", TARGET_PARQUET_MB),
    ):
        seconds, cpu, growth_mb, size = _measure(client, url)
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
                # The exporting process's own CPU time (the database's excluded): on a
                # machine shared with other work the wall time above is inflated by
                # waiting for a core, this is not.
                "section": "export",
                "name": f"{label} 100k results: CPU time of the process",
                "value": cpu,
                "unit": "s",
                "target": None,
                "ok": None,
            },
            {
                "section": "export",
                "name": f"{label} 100k results: peak RSS growth",
                "value": growth_mb,
                "unit": "MB",
                "target": f"≤ {target_mb:g}",
                "ok": growth_mb <= target_mb,
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
