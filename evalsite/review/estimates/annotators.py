"""May this judge replace a reviewer? The alternative annotator test (Calderon,
Reichart & Dror, ACL 2025) on a run scorer's pass/fail answers: the statistics are
scoring.inference.alternative_annotator_test; this module gathers the answers."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace
from datetime import datetime

from evalsite.evals.models import Result, RunScorer
from evalsite.review.models import Review
from evalsite.review.team.selectors import ReviewState, cached_by_state, review_state
from scoring.inference import (
    AlternativeAnnotatorTest,
    NotEnoughAnnotations,
    alternative_annotator_test,
)
from scoring.inference.annotators import MIN_ITEMS_PER_REVIEWER

DEFAULT_EPSILON = 0.1


@dataclass(frozen=True)
class AnnotatorVerdict:
    """The test, or why it cannot be run yet (`refusal`) and what is missing."""

    epsilon: float
    items: int  # results with the judge's verdict and two or more human answers
    reviewers: int
    test: AlternativeAnnotatorTest | None = None
    refusal: str = ""
    more_items: tuple[tuple[str, int], ...] = ()
    more_reviewers: int = 0
    min_items: int = MIN_ITEMS_PER_REVIEWER
    # Set only when asked with allow_stale: the test of an earlier state, as of
    # this time (see team.selectors.cached_by_state).
    as_of: datetime | None = None


def annotator_test(
    *,
    run_scorer: RunScorer,
    epsilon: float = DEFAULT_EPSILON,
    state: ReviewState | None = None,
    allow_stale: bool = False,
) -> AnnotatorVerdict:
    """The judge's pass/fail against every reviewer's latest pass/fail answer on the
    scorer's ok results (from any queue: the test compares people with the judge,
    it estimates nothing about the run, so how the results were picked does not
    bias it). Cached by the run's review state, like the agreement figures: it reads
    the same answers and verdicts (1.5 s uncached for bench_million's 150k answers).
    Exact unless `allow_stale` (the agreement page only)."""
    if state is None:
        state = review_state(run_id=run_scorer.run_id)
    verdict, as_of = cached_by_state(
        run_id=run_scorer.run_id,
        key=state.key(f"alt{run_scorer.pk}:{epsilon!r}", [run_scorer.pk]),
        state=state,
        compute=lambda: _annotator_test(run_scorer=run_scorer, epsilon=epsilon),
        allow_stale=allow_stale,
    )
    return verdict if as_of is None else replace(verdict, as_of=as_of)


def _annotator_test(*, run_scorer: RunScorer, epsilon: float) -> AnnotatorVerdict:
    answers = Review.objects.filter(
        result__run_scorer=run_scorer,
        kind=Review.Kind.ANSWER,
        passed__isnull=False,
        reviewer__isnull=False,
    )
    # Only the answered results' verdicts: the test looks at no other. Reading every
    # result of the scorer made the agreement page read a whole run: 18.4 s for the
    # five scorers of a 1M-result run at load average 15 (bench_million).
    judge: dict[Hashable, Hashable | float] = dict(
        Result.objects.filter(
            run_scorer=run_scorer,
            status=Result.Status.OK,
            judge_passed__isnull=False,
            pk__in=answers.values("result_id"),
        ).values_list("pk", "judge_passed")
    )
    latest: dict[tuple[int, str], bool] = {}
    for result_id, username, passed in answers.order_by("created_at", "id").values_list(
        "result_id", "reviewer__username", "passed"
    ):
        latest[(result_id, username)] = bool(passed)
    humans: dict[Hashable, dict[Hashable, Hashable | float]] = {}
    for (result_id, username), passed in latest.items():
        if result_id in judge:
            humans.setdefault(result_id, {})[username] = passed
    shared = sum(1 for answers in humans.values() if len(answers) >= 2)
    reviewers = len({u for answers in humans.values() for u in answers})
    base = AnnotatorVerdict(epsilon=epsilon, items=shared, reviewers=reviewers)
    try:
        test = alternative_annotator_test(judge, humans, epsilon=epsilon)
    except NotEnoughAnnotations as exc:
        return AnnotatorVerdict(
            epsilon=epsilon,
            items=shared,
            reviewers=reviewers,
            refusal=str(exc),
            more_items=tuple((str(r), n) for r, n in exc.more_items.items()),
            more_reviewers=exc.more_reviewers,
        )
    return AnnotatorVerdict(
        epsilon=base.epsilon, items=base.items, reviewers=reviewers, test=test
    )
