"""The results explorer on a 100k-result run (50k items × 2 scorers), section "explorer".

Times the real page (Django test client, logged-in reviewer, the htmx partial as the UI
fetches it on every filter change) for typical filter combinations, plus the results
API. Reports p50 and p95 of the server time over REPEAT requests per case. Runs on the
configured database (`make bench` gives it a scratch one); data is built once and reused.

Run alone: `python -m bench bench_review_explorer`. Target: p95 ≤ 150 ms per case.
"""

from __future__ import annotations

import time
from typing import Any

from bench._common import (
    allow_testserver,
    bench_member,
    create_scorers,
    latency_rows,
    replace_dataset,
    reusable_run,
    setup_row,
    time_get,
)

N_ITEMS = 50_000
N_SCORERS = 2
BATCH = 5_000
REPEAT = 20
TARGET_MS = 150.0
DATASET_NAME = "bench-explorer-100k"


def _item_fields(i: int) -> dict[str, Any]:
    return {
        "input": f"Question {i}: what does the report say about region {i % 17}?",
        "output": f"Revenue in region {i % 17} grew by {i % 9} percent.",
        "context": [f"Revenue in region {i % 17} grew {i % 9}%."],
        "reference": "",
    }


def _build() -> tuple[Any, Any]:
    """The bench run (built once): varied scores, verdicts, reviews and assignees."""
    from django.db import connection, transaction

    from evalsite.accounts.models import Role
    from evalsite.evals.models import Result, Run

    user, project = bench_member("bench-explorer", Role.REVIEWER)
    run = reusable_run(project, DATASET_NAME, N_ITEMS * N_SCORERS)
    if run is not None:
        return run, user
    with transaction.atomic():
        dataset = replace_dataset(
            project, DATASET_NAME, N_ITEMS, BATCH, _item_fields, file_format="jsonl"
        )
        run = Run.objects.create(
            project=project, dataset=dataset, status="done", total=N_ITEMS * N_SCORERS
        )
        scorers = create_scorers(
            run, [("Faithfulness", "faithfulness"), ("Hallucination", "hallucination")]
        )
        item_ids = list(dataset.items.order_by("index").values_list("id", flat=True))
        rows = []
        for n, item_id in enumerate(item_ids):
            for rs in scorers:
                score = ((n * 7 + rs.position * 3) % 11) / 10
                error = n % 97 == 0
                rows.append(
                    Result(
                        run=run,
                        item_id=item_id,
                        run_scorer=rs,
                        status="error" if error else "ok",
                        error="judge timed out" if error else "",
                        judge_score=None if error else score,
                        final_score=None if error else score,
                        judge_passed=None if error else score >= 0.5,
                        final_passed=None if error else score >= 0.5,
                        reviewed=n % 10 == 0,
                        assignee=user if n % 5 == 0 else None,
                        reason="Most claims are supported.",
                        analysis={"claims": [], "verdicts": []},
                    )
                )
            if len(rows) >= BATCH:
                Result.objects.bulk_create(rows)
                rows = []
        Result.objects.bulk_create(rows)
    if connection.vendor == "postgresql":
        # Fresh planner statistics, as autovacuum would give a real database.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return run, user


def run() -> list[dict]:
    from django.test import Client

    allow_testserver()
    started = time.perf_counter()
    bench_run, user = _build()
    rows: list[dict] = [setup_row("explorer", time.perf_counter() - started)]
    client = Client()
    client.force_login(user)
    faith = bench_run.run_scorers.order_by("position").first()
    page = f"/projects/{bench_run.project_id}/runs/{bench_run.pk}/results/"
    htmx = {"HX-Request": "true"}
    cases = [
        ("page, no filter (full page)", page, {}),
        ("no filter, htmx partial", page, htmx),
        ("final fail", f"{page}?final=fail", htmx),
        (
            "scorer + judge fail, sort final score ↓",
            f"{page}?scorer={faith.pk}&judge=fail&sort=-final",
            htmx,
        ),
        (
            "score range 0.2–0.4 + not reviewed",
            f"{page}?min_score=0.2&max_score=0.4&reviewed=no",
            htmx,
        ),
        ("status error", f"{page}?status=error", htmx),
        ("assigned to me, sort updated ↓", f"{page}?mine=on&sort=-updated", htmx),
        ("disagreement", f"{page}?disagree=on", htmx),
        ("text search", f"{page}?q=region+13", htmx),
        ("page 150 (offset 7,450)", f"{page}?page=150", htmx),
        (
            "API: final fail, limit 100",
            f"/api/runs/{bench_run.pk}/results?passed=false&limit=100",
            {},
        ),
    ]
    for name, url, headers in cases:
        samples = time_get(client, url, headers, REPEAT)
        rows += latency_rows("explorer", f"{name}:", samples, TARGET_MS)
    return rows
