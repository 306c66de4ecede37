"""Corrected figures on the 100k-result run (25k items × 4 scorers) with 2,000 human
labels from calibration samples (500 per scorer, drawn by the active design),
section "estimates":
- every scorer's corrected pass rate and mean, uncached (cache cleared before each
  try): target ≤ 200 ms for all four;
- the same through run_estimates (the run page's aggregates plus the estimates);
- one scorer's figures right after one more review (a reviewer's pass/fail on an
  unanswered sample entry): p50 / p95, target p95 ≤ 50 ms, the override's budget.
Reuses bench_review's run (built once) and its fixed review state (about 5 % of the
results reviewed outside any sample: counted, not used). Run alone:
`python -m bench bench_estimates`.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench._common import latency_rows, setup_row
from bench.bench_review import _build, _reset_reviews

LABELS_PER_SCORER = 500
UNANSWERED = 41  # left for the timed reviews (the first warms caches)
REPEAT = 5
ALL_TARGET_MS = 200.0
AFTER_REVIEW_TARGET_MS = 50.0


def _label_samples(run: Any, user: Any) -> tuple[Any, list[int]]:
    """Draw a 500-label active sample per scorer and answer all but UNANSWERED of the
    first scorer's: the humans agree with the judge except on every 7th result.
    Returns the first scorer and the result ids left to answer."""
    from django.db import transaction
    from django.db.models import F
    from django.utils import timezone

    from evalsite.evals.models import Result, ReviewVersion
    from evalsite.review.estimates.services import (
        SampleDesign,
        calibration_sample_create,
    )
    from evalsite.review.models import ReviewQueue

    ReviewQueue.objects.filter(run=run, source=ReviewQueue.Source.CALIBRATION).delete()
    scorers = list(run.run_scorers.order_by("position", "id"))
    left: list[int] = []
    now = timezone.now()
    for n, rs in enumerate(scorers):
        queue = calibration_sample_create(
            run=run,
            run_scorer=rs,
            user=user,
            spec=SampleDesign(design="active", budget=LABELS_PER_SCORER, seed=n),
        )
        ids = list(
            queue.entries.order_by("position").values_list("result_id", flat=True)
        )
        if n == 0:
            left, ids = ids[:UNANSWERED], ids[UNANSWERED:]
        agree = [pk for i, pk in enumerate(ids) if i % 7]
        disagree = [pk for i, pk in enumerate(ids) if not i % 7]
        with transaction.atomic():
            Result.objects.filter(pk__in=agree).update(
                reviewed=True,
                human_passed=F("judge_passed"),
                reviewed_by=user,
                reviewed_at=now,
            )
            for passed in (True, False):
                Result.objects.filter(pk__in=disagree, judge_passed=passed).update(
                    reviewed=True,
                    final_passed=not passed,
                    pass_overridden=True,
                    overridden=True,
                    human_passed=not passed,
                    reviewed_by=user,
                    reviewed_at=now,
                )
            ReviewVersion.objects.update_or_create(
                run_scorer_id=rs.pk,
                defaults={"version": F("version") + 1},
                create_defaults={"version": 1},
            )
    return scorers[0], left


def run() -> list[dict]:
    from django.core.cache import cache

    from evalsite.evals.models import Result, RunScorer
    from evalsite.evals.results.verdicts import result_set_human_pass
    from evalsite.review.api.aggregates import run_aggregates
    from evalsite.review.estimates.selectors import run_estimates, scorer_estimates

    started = time.perf_counter()
    bench_run, user = _build()
    _reset_reviews(bench_run, user)
    first, left = _label_samples(bench_run, user)
    out: list[dict] = [setup_row("estimates", time.perf_counter() - started)]
    scorers = list(
        RunScorer.objects.filter(run=bench_run)
        .select_related("run")
        .order_by("position", "id")
    )

    # The run page has the aggregates' figures already (run_estimates):
    # taken once here, the estimates alone are timed.
    aggs = {a.run_scorer_id: a for a in run_aggregates(run_id=bench_run.pk)}
    samples = []
    for _ in range(REPEAT):
        cache.clear()
        t0 = time.perf_counter()
        figures = [
            scorer_estimates(
                run_scorer=rs,
                reviewed=aggs[rs.pk].reviewed,
                final_pass_rate=aggs[rs.pk].final_pass_rate,
                final_mean=aggs[rs.pk].final_mean,
            )
            for rs in scorers
        ]
        samples.append((time.perf_counter() - t0) * 1000)
    labels = sum(f.labels_used for f in figures)
    name = f"corrected figures, 4 scorers × 25k, {labels} labels, uncached"
    out.append(
        {
            "section": "estimates",
            "name": f"{name} (median of {REPEAT})",
            "value": statistics.median(samples),
            "unit": "ms",
            "target": f"≤ {ALL_TARGET_MS:g}",
            "ok": statistics.median(samples) <= ALL_TARGET_MS,
        }
    )
    out.append(
        {
            "section": "estimates",
            "name": f"{name} (worst of {REPEAT})",
            "value": max(samples),
            "unit": "ms",
            "target": None,
            "ok": None,
        }
    )
    samples = []
    for _ in range(REPEAT):
        cache.clear()
        t0 = time.perf_counter()
        run_estimates(run_id=bench_run.pk)
        samples.append((time.perf_counter() - t0) * 1000)
    out.append(
        {
            "section": "estimates",
            "name": "run aggregates + corrected figures, uncached (median)",
            "value": statistics.median(samples),
            "unit": "ms",
            "target": None,
            "ok": None,
        }
    )

    first.run = bench_run
    alone, with_aggregates = [], []
    results = {r.pk: r for r in Result.objects.filter(pk__in=left)}
    for i, pk in enumerate(left):
        result = results[pk]
        result_set_human_pass(
            result=result,
            user=user,
            passed=not result.judge_passed if i % 3 else bool(result.judge_passed),
        )
        # What the run page's card needs after the review: the scorer's aggregates
        # (the override path already pays for them) and then its estimates.
        t0 = time.perf_counter()
        (agg,) = run_aggregates(run_id=bench_run.pk, run_scorer_id=first.pk)
        t1 = time.perf_counter()
        scorer_estimates(
            run_scorer=first,
            reviewed=agg.reviewed,
            final_pass_rate=agg.final_pass_rate,
            final_mean=agg.final_mean,
        )
        t2 = time.perf_counter()
        if i:  # the first one warms caches
            alone.append((t2 - t1) * 1000)
            with_aggregates.append((t2 - t0) * 1000)
    out += latency_rows(
        "estimates",
        "one scorer's corrected figures after one review",
        alone,
        AFTER_REVIEW_TARGET_MS,
    )
    out += latency_rows(
        "estimates",
        "the same with the scorer's aggregates",
        with_aggregates,
        AFTER_REVIEW_TARGET_MS,
    )
    return out
