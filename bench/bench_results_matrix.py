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
    settle_database,
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
    from django.db import transaction

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
    return run, user


def _deep_cursor(qs: Any, sort: str, page: int, per_page: int) -> str:
    """The `after` cursor the Next link of page `page` - 1 carries (the last row
    before page `page`), found by offset here rather than by walking the pages."""
    from evalsite.evals.models import Result
    from evalsite.review.explorer.keyset import cursor_of

    pk = qs.values_list("id", flat=True)[(page - 1) * per_page - 1]
    return cursor_of(Result.objects.get(pk=pk), sort=sort).encode()


def _deep_cases(
    run: Any, user: Any, lead: Any, page: str
) -> list[tuple[str, str, dict]]:
    """Page DEEP_PAGE by keyset: of the explorer (50 results a page: results
    249,951–250,000 of 500k), and the matrix's deepest page (25 rows a page, the
    smallest size: 100k items make 4,000 pages)."""
    from evalsite.review.explorer.schemas import ResultQuery
    from evalsite.review.explorer.selectors import results_filter

    htmx = {"HX-Request": "true"}
    explorer = f"/projects/{run.project_id}/runs/{run.pk}/results/"
    cases = []
    for sort in ("item", "-score"):
        sort_param = "" if sort == "item" else f"&sort={sort}"
        everything = results_filter(run=run, query=ResultQuery(sort=sort), user=user)
        if everything.count() >= DEEP_PAGE * PER_PAGE:
            after = _deep_cursor(everything, sort, DEEP_PAGE, PER_PAGE)
            cases.append(
                (
                    f"explorer page {DEEP_PAGE:,} by keyset, sort {sort}",
                    f"{explorer}?after={after}{sort_param}",
                    htmx,
                )
            )
        leads = results_filter(
            run=run, query=ResultQuery(run_scorer_id=lead.pk, sort=sort), user=user
        )
        deepest = min(DEEP_PAGE, leads.count() // 25)
        after = _deep_cursor(leads, sort, deepest, 25)
        cases.append(
            (
                f"matrix page {deepest:,} by keyset (25 rows), sort {sort}",
                f"{page}?after={after}&per_page=25{sort_param}",
                htmx,
            )
        )
    return cases


def run() -> list[dict]:
    from django.test import Client

    allow_testserver()
    started = time.perf_counter()
    bench_run, user = _build()
    # VACUUM ANALYZE, as autovacuum gives a real database: fresh statistics, and a
    # visibility map, without which each count visits the rows (11 ms vs 147 ms).
    settle_database()
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
    cases += _deep_cases(bench_run, user, lead, page)
    for name, url, headers in cases:
        samples = time_get(client, url, headers, REPEAT)
        rows += latency_rows(section, f"{name}:", samples, TARGET_MS)
    return rows
