"""The results matrix on a 100k-item × 5-scorer run (500k results), section "matrix".

Times the real page (Django test client, logged-in reviewer, the htmx #matrix region
as the UI fetches it on every filter change): the first page, each filter change, and
page 5,000 reached by keyset (the `after` cursor of the row before it, as the Next link
carries it). Reports p50 and p95 of the server time over REPEAT requests per case. Data
is bulk-loaded once on the configured database and reused.

Run alone: `python -m bench bench_results_matrix`. Target: p95 ≤ 150 ms per case.
`BENCH_MATRIX_ITEMS` makes a smaller run (the row names say how many items).
"""

from __future__ import annotations

import os
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

N_ITEMS = int(os.environ.get("BENCH_MATRIX_ITEMS", "100000"))
SCORERS = [
    ("Faithfulness", "faithfulness"),
    ("Hallucination", "hallucination"),
    ("Answer relevancy", "answer_relevancy"),
    ("Context relevance", "context_relevance"),
    ("Factuality", "factuality"),
]
BATCH = 10_000
REPEAT = 20
TARGET_MS = 150.0
PER_PAGE = 50
DEEP_PAGE = 5_000
DATASET_NAME = f"bench-matrix-{N_ITEMS}"


def _item_fields(i: int) -> dict[str, Any]:
    return {
        "input": f"Question {i}: what does the report say about region {i % 17}?",
        "output": f"Revenue in region {i % 17} grew by {i % 9} percent.",
        "context": [f"Revenue in region {i % 17} grew {i % 9}%."],
        "reference": "",
    }


def _build() -> tuple[Any, Any]:
    """The bench run (built once): varied scores and verdicts, some reviewed."""
    from django.db import connection, transaction

    from evalsite.accounts.models import Role
    from evalsite.evals.models import Result, Run

    user, project = bench_member("bench-matrix", Role.REVIEWER)
    total = N_ITEMS * len(SCORERS)
    run = reusable_run(project, DATASET_NAME, total)
    if run is not None:
        return run, user
    with transaction.atomic():
        dataset = replace_dataset(
            project, DATASET_NAME, N_ITEMS, BATCH, _item_fields, file_format="jsonl"
        )
        run = Run.objects.create(
            project=project, dataset=dataset, status="done", total=total
        )
        scorers = create_scorers(run, SCORERS)
        item_ids = list(dataset.items.order_by("index").values_list("id", flat=True))
        rows = []
        for n, item_id in enumerate(item_ids):
            for rs in scorers:
                score = ((n * 7 + rs.position * 3) % 11) / 10
                error = (n + rs.position) % 97 == 0
                final = score if n % 13 else 1 - score
                rows.append(
                    Result(
                        run=run,
                        item_id=item_id,
                        run_scorer=rs,
                        status="error" if error else "ok",
                        error="judge timed out" if error else "",
                        judge_score=None if error else score,
                        final_score=None if error else final,
                        judge_passed=None if error else score >= 0.5,
                        final_passed=None if error else final >= 0.5,
                        reviewed=n % 10 == 0,
                        overridden=not error and n % 13 == 0,
                        assignee=user if n % 5 == 0 else None,
                    )
                )
            if len(rows) >= BATCH:
                Result.objects.bulk_create(rows)
                rows = []
        Result.objects.bulk_create(rows)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return run, user


def _deep_cursor(run: Any, user: Any, sort: str, lead: Any) -> str:
    """The `after` cursor the Next link of page DEEP_PAGE - 1 carries (the last row
    of the rows before page DEEP_PAGE), without walking 5,000 pages."""
    from evalsite.evals.models import Result
    from evalsite.review.explorer.keyset import cursor_of
    from evalsite.review.explorer.schemas import ResultQuery
    from evalsite.review.explorer.selectors import results_filter

    qs = results_filter(
        run=run, query=ResultQuery(run_scorer_id=lead.pk, sort=sort), user=user
    )
    offset = (DEEP_PAGE - 1) * PER_PAGE - 1
    pk = qs.values_list("id", flat=True)[offset]
    return cursor_of(Result.objects.get(pk=pk), sort=sort).encode()


def run() -> list[dict]:
    from django.test import Client

    allow_testserver()
    started = time.perf_counter()
    bench_run, user = _build()
    section = f"matrix ({N_ITEMS:,} items × {len(SCORERS)} scorers)"
    rows: list[dict] = [setup_row(section, time.perf_counter() - started)]
    client = Client()
    client.force_login(user)
    lead = bench_run.run_scorers.order_by("position").first()
    second = bench_run.run_scorers.order_by("position")[1]
    page = f"/projects/{bench_run.project_id}/runs/{bench_run.pk}/matrix/"
    htmx = {"HX-Request": "true"}
    cases = [
        ("first page (full page)", page, {}),
        ("first page, htmx region", page, htmx),
        ("final fail", f"{page}?final=fail", htmx),
        ("scorer 2 + judge fail", f"{page}?run_scorer={second.pk}&judge=fail", htmx),
        ("judge pass, sort judge score ↓", f"{page}?judge=pass&sort=-score", htmx),
        ("sort final score ↑", f"{page}?sort=final", htmx),
        ("not reviewed + overridden", f"{page}?reviewed=no&overridden=yes", htmx),
        ("status error", f"{page}?status=error", htmx),
        ("assigned to me, sort updated ↓", f"{page}?mine=on&sort=-updated", htmx),
        ("disagreement", f"{page}?disagree=on", htmx),
        ("text search", f"{page}?q=region+13", htmx),
        ("last page", f"{page}?last=1", htmx),
    ]
    if N_ITEMS >= DEEP_PAGE * PER_PAGE:
        for sort in ("item", "-score"):
            after = _deep_cursor(bench_run, user, sort, lead)
            sort_param = "" if sort == "item" else f"&sort={sort}"
            cases.append(
                (
                    f"page {DEEP_PAGE:,} by keyset, sort {sort}",
                    f"{page}?after={after}{sort_param}",
                    htmx,
                )
            )
    for name, url, headers in cases:
        samples = time_get(client, url, headers, REPEAT)
        rows += latency_rows(section, f"{name}:", samples, TARGET_MS)
    return rows
