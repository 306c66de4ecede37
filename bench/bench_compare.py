"""Compare two 100k-result runs (25k items × 4 scorers each), section "compare".

Run A is on version 1 of a dataset, run B on version 2: 1 % of the items removed,
1 % added, 10 % with another output and score, the rest with the same answer;
items match by the metadata key `id`. Server times (the app's Server-Timing header)
of requests made with the Django test client and a logged-in viewer:
- the compare page's first page (per-scorer deltas and tests for all four scorers,
  50 items regressions first): p50 / p95, target p95 ≤ 300 ms;
- the same through the API, and with the "regressed" filter;
- two runs on one dataset (matched item by item);
- the first page matched by whitespace-normalised input instead of the key;
- the first page after a review of the listed scorer (its pair recomputed, the rest
  from the cache: a compare's figures are cached under the results' state);
- cold first pages, nothing cached (every figure computed), 20 samples each with the
  cache cleared before each: p50 / p95, target p95 ≤ 300 ms. The two versions'
  items were matched when version 2 was uploaded (services.dataset_matches, as the
  upload's task does), so a cold page reads the stored matching;
- the first compare ever of two datasets by a rule nobody matched before (another
  key, or two unrelated datasets): the items matched on the page too, 20 samples
  with the stored matchings deleted before each.
The repeated first pages read the cache; the two rows above say what a change costs.
Runs on the configured database (`make bench` gives it a scratch one); the data is
built once and reused. Run alone: `python -m bench bench_compare`.
"""

from __future__ import annotations

import gc
import random
import time
from typing import Any

from bench._common import (
    allow_testserver,
    bench_member,
    latency_rows,
    server_ms,
    settle_database,
    setup_row,
    time_get,
)

N_ITEMS = 25_000
KINDS_USED = ("faithfulness", "hallucination", "context_relevance", "factuality")
BATCH = 5_000
REPEAT = 30
AFTER_REVIEW_REPEAT = 20
COLD_REPEAT = 20
PAGE_TARGET_MS = 300.0
DATASET_NAME = "bench-compare"
REMOVED_EVERY = 100  # v1 item i with i % 100 == 7 is gone from v2
CHANGED_EVERY = 10  # v2 answers item i with i % 10 == 3 differently


def _item(i: int, *, version: int) -> dict[str, Any]:
    changed = version == 2 and i % CHANGED_EVERY == 3
    return {
        "input": f"Question {i}: what does the report say about region {i % 17}?",
        "output": (
            f"Revenue in region {i % 17} fell by {i % 7} percent in 2023."
            if changed
            else f"Revenue in region {i % 17} grew by {i % 9} percent in 2023."
        ),
        "context": [f"Revenue in region {i % 17} grew {i % 9}%."],
        "reference": f"Region {i % 17} grew {i % 9}%.",
        "metadata": {"id": f"q{i}", "region": i % 17},
    }


def _keys(version: int) -> list[int]:
    """The question numbers a version holds, in file order."""
    if version == 1:
        return list(range(N_ITEMS))
    kept = [i for i in range(N_ITEMS) if i % REMOVED_EVERY != 7]
    added = list(range(N_ITEMS, N_ITEMS + N_ITEMS - len(kept)))
    return kept + added


def _build_run(project: Any, dataset: Any, name: str, *, version: int) -> Any:
    from django.utils import timezone

    from evalsite.evals.models import Result, Run, RunScorer
    from scoring import KINDS, validate_options

    run = Run.objects.create(
        project=project,
        dataset=dataset,
        name=name,
        status="done",
        total=N_ITEMS * len(KINDS_USED),
        finished_at=timezone.now(),
    )
    scorers = [
        RunScorer.objects.create(
            run=run,
            name=KINDS[kind].label,
            kind=kind,
            position=pos,
            options=validate_options(kind, {}),
        )
        for pos, kind in enumerate(KINDS_USED)
    ]
    items = list(dataset.items.order_by("index").values_list("id", "metadata"))
    rows: list[Result] = []
    for item_id, metadata in items:
        q = int(metadata["id"][1:])
        for rs in scorers:
            # The same score for the same question and scorer in both runs, unless
            # version 2 answers it differently; an error now and then.
            rng = random.Random(q * 31 + rs.position)
            score = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0])
            if version == 2 and q % CHANGED_EVERY == 3:
                score = random.Random(q * 37 + rs.position).choice([0.0, 0.5, 1.0])
            if (q + version) % 97 == 0:
                rows.append(
                    Result(
                        run=run,
                        item_id=item_id,
                        run_scorer=rs,
                        status="error",
                        error="judge timed out",
                    )
                )
                continue
            passed = score >= 0.5 if rs.kind != "hallucination" else score <= 0.5
            rows.append(
                Result(
                    run=run,
                    item_id=item_id,
                    run_scorer=rs,
                    status="ok",
                    analysis={},
                    final_analysis={},
                    judge_score=score,
                    final_score=score,
                    judge_passed=passed,
                    final_passed=passed,
                    reason="bench",
                )
            )
        if len(rows) >= BATCH:
            Result.objects.bulk_create(rows)
            rows = []
    Result.objects.bulk_create(rows)
    return run


def _build() -> tuple[Any, Any, Any, Any]:
    """(viewer, run A on v1, run B on v2, run A2 on v1), built once and reused."""
    from django.db import connection, transaction

    from evalsite.accounts.models import Role
    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals.models import Run

    user, project = bench_member("bench-compare", Role.VIEWER)
    names = ("compare A v1", "compare B v2", "compare A2 v1")
    found = {r.name: r for r in Run.objects.filter(project=project, name__in=names)}
    expected = N_ITEMS * len(KINDS_USED)
    if len(found) == len(names) and all(
        r.results.count() == expected for r in found.values()
    ):
        return user, found[names[0]], found[names[1]], found[names[2]]
    with transaction.atomic():
        Run.objects.filter(project=project).delete()
        Dataset.objects.filter(project=project).delete()
        datasets = []
        for version in (1, 2):
            dataset = Dataset.objects.create(
                project=project,
                name=DATASET_NAME,
                version=version,
                item_count=N_ITEMS,
                file_format="jsonl",
            )
            keys = _keys(version)
            for start in range(0, len(keys), BATCH):
                Item.objects.bulk_create(
                    Item(dataset=dataset, index=n, **_item(q, version=version))
                    for n, q in enumerate(keys[start : start + BATCH], start=start)
                )
            datasets.append(dataset)
        run_a = _build_run(project, datasets[0], names[0], version=1)
        run_b = _build_run(project, datasets[1], names[1], version=2)
        run_a2 = _build_run(project, datasets[0], names[2], version=2)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE evals_result")
            cursor.execute("VACUUM ANALYZE datasets_item")
    return user, run_a, run_b, run_a2


def _match_at_upload(run_b: Any) -> None:
    """What the upload of version 2 does after its commit (tasks.
    dataset_versions_match): match it with version 1 by the rules compare offers."""
    from evalsite.review.services.dataset_matches import dataset_versions_match

    dataset_versions_match(dataset_id=run_b.dataset_id)


def run() -> list[dict]:
    from django.core.cache import cache
    from django.db.models import F
    from django.test import Client
    from django.urls import reverse

    from evalsite.review.models import DatasetMatch, ReviewVersion

    allow_testserver()
    started = time.perf_counter()
    user, run_a, run_b, run_a2 = _build()
    _match_at_upload(run_b)
    settle_database()
    out: list[dict] = [setup_row("compare", time.perf_counter() - started)]
    gc.collect()
    gc.freeze()
    client = Client()
    client.force_login(user)
    page = reverse("review:compare", args=[run_a.project_id])
    versions = f"{page}?a={run_a.pk}&b={run_b.pk}&match=key&key=id"
    same = f"{page}?a={run_a.pk}&b={run_a2.pk}"
    by_input = f"{page}?a={run_a.pk}&b={run_b.pk}&match=input"
    htmx = {"HX-Request": "true"}

    def cold_samples(url: str, *, forget_matchings: bool) -> list[float]:
        """First pages with the cache cleared before each (and the stored
        matchings deleted too, when asked)."""
        samples = []
        for _ in range(COLD_REPEAT):
            cache.clear()
            if forget_matchings:
                DatasetMatch.objects.all().delete()
            response = client.get(url, headers=htmx)
            if (
                response.status_code != 200
                or b'id="compare-rows"' not in response.content
            ):
                raise RuntimeError(f"compare answered {response.status_code}")
            samples.append(server_ms(response))
        return samples

    # Cold first pages: nothing cached (cleared before each sample), every figure
    # computed, as for runs that just finished or were just reviewed.
    for url, name in (
        (versions, "v1 vs v2 by key"),
        (same, "one dataset"),
        (by_input, "v1 vs v2 by input"),
    ):
        out += latency_rows(
            "compare",
            f"first page, cold (nothing cached), {name}",
            cold_samples(url, forget_matchings=False),
            PAGE_TARGET_MS,
        )
    # The first compare ever of two datasets by a rule: the matching too.
    for url, name in ((versions, "by key"), (by_input, "by input")):
        out += latency_rows(
            "compare",
            f"first page, first compare ever of the two datasets {name}",
            cold_samples(url, forget_matchings=True),
            PAGE_TARGET_MS,
        )
    _match_at_upload(run_b)
    # After a review of one scorer: that scorer's pair is recomputed (figures and
    # page), the other three come from the cache, as do the matched items.
    client.get(versions, headers=htmx)
    faith_b = run_b.run_scorers.get(kind="faithfulness")
    samples = []
    for _ in range(AFTER_REVIEW_REPEAT):
        ReviewVersion.objects.update_or_create(
            run_scorer_id=faith_b.pk,
            defaults={"version": F("version") + 1},
            create_defaults={"version": 1},
        )
        response = client.get(versions, headers=htmx)
        if response.status_code != 200:
            raise RuntimeError(f"compare answered {response.status_code}")
        samples.append(server_ms(response))
    out += latency_rows(
        "compare",
        "first page after a review of the listed scorer (v1 vs v2 by key)",
        samples,
        PAGE_TARGET_MS,
    )
    samples = time_get(client, versions, htmx, REPEAT)
    out += latency_rows(
        "compare",
        "first page, 2 × 100k results, v1 vs v2 matched by key",
        samples,
        PAGE_TARGET_MS,
    )
    samples = time_get(client, f"{versions}&only=regressions", htmx, REPEAT)
    out += latency_rows(
        "compare", "first page, regressed only (by key)", samples, PAGE_TARGET_MS
    )
    api = f"/api/runs/{run_a.pk}/compare/{run_b.pk}?match=key&key=id&limit=50"
    samples = time_get(client, api, {}, REPEAT)
    out += latency_rows("compare", "API first page (by key)", samples, PAGE_TARGET_MS)
    samples = time_get(client, same, htmx, REPEAT)
    out += latency_rows(
        "compare", "first page, two runs of one dataset", samples, PAGE_TARGET_MS
    )
    samples = time_get(client, by_input, htmx, REPEAT)
    out += latency_rows(
        "compare", "first page, v1 vs v2 matched by input", samples, PAGE_TARGET_MS
    )
    return out
