"""The results explorer on a 100k-result run (50k items × 2 scorers), section "explorer".

Times the real page (Django test client, logged-in reviewer, the htmx partial as the UI
fetches it on every filter change) for typical filter combinations, plus the results
API. Reports p50 and p95 of the server time over REPEAT requests per case. Runs on the
configured database (`make bench` gives it a scratch one); data is built once and reused.

Run alone: `python -m bench bench_review_explorer`. Target: p95 ≤ 150 ms per case.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

N_ITEMS = 50_000
N_SCORERS = 2
BATCH = 5_000
REPEAT = 20
TARGET_MS = 150.0
DATASET_NAME = "bench-explorer-100k"


def _build() -> tuple[Any, Any]:
    """The bench run (built once): varied scores, verdicts, reviews and assignees."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from evalsite.accounts.models import Membership, Project, Role
    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals.models import Result, Run, RunScorer

    user, _ = get_user_model().objects.get_or_create(username="bench-explorer")
    project, _ = Project.objects.get_or_create(name="bench-explorer")
    Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": Role.REVIEWER}
    )
    run = (
        Run.objects.filter(project=project, dataset__name=DATASET_NAME)
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
            file_format="jsonl",
            item_count=N_ITEMS,
        )
        for start in range(0, N_ITEMS, BATCH):
            Item.objects.bulk_create(
                Item(
                    dataset=dataset,
                    index=i,
                    input=f"Question {i}: what does the report say about region {i % 17}?",
                    output=f"Revenue in region {i % 17} grew by {i % 9} percent.",
                    context=[f"Revenue in region {i % 17} grew {i % 9}%."],
                    reference="",
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


def _time(client: Any, url: str, headers: dict[str, str]) -> list[float]:
    client.get(url, headers=headers)  # warm caches (templates, query plans)
    samples = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        response = client.get(url, headers=headers)
        samples.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
    return samples


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def run() -> list[dict]:
    from django.conf import settings
    from django.test import Client

    if "testserver" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    started = time.perf_counter()
    bench_run, user = _build()
    rows: list[dict] = [
        {
            "section": "explorer",
            "name": "setup (build or reuse 100k results)",
            "value": time.perf_counter() - started,
            "unit": "s",
            "target": None,
            "ok": None,
        }
    ]
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
        samples = _time(client, url, headers)
        p95 = _p95(samples)
        rows.append(
            {
                "section": "explorer",
                "name": f"{name}: p50",
                "value": statistics.median(samples),
                "unit": "ms",
                "target": None,
                "ok": None,
            }
        )
        rows.append(
            {
                "section": "explorer",
                "name": f"{name}: p95",
                "value": p95,
                "unit": "ms",
                "target": f"≤ {TARGET_MS:g}",
                "ok": p95 <= TARGET_MS,
            }
        )
    return rows
