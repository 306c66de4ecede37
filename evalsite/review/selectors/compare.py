"""Two runs of one dataset compared scorer by scorer and item by item."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from django.db.models import (
    Avg,
    Case,
    Count,
    F,
    FloatField,
    IntegerField,
    Q,
    Value,
    When,
)

from evalsite.evals.models import Result, Run, RunScorer
from evalsite.review.selectors.aggregates import _ratio
from scoring import KINDS


@dataclass
class ComparePair:
    """Summary of one scorer (same kind and name) in both runs."""

    a: RunScorer
    b: RunScorer
    direction: str
    n: int = 0
    both_ok: int = 0
    regressions: int = 0
    improvements: int = 0
    unchanged: int = 0
    pass_to_fail: int = 0
    fail_to_pass: int = 0
    missing: int = 0
    a_mean: float | None = None
    b_mean: float | None = None
    mean_delta: float | None = None
    a_pass_rate: float | None = None
    b_pass_rate: float | None = None

    @property
    def label(self) -> str:
        return self.a.name

    def summary(self) -> dict[str, int | float | None]:
        """The counts, means and pass rates by name: every field after a, b and
        direction, in order."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("a", "b", "direction")
        }


@dataclass
class Comparison:
    run_a: Run
    run_b: Run
    pairs: list[ComparePair]
    unmatched_a: list[RunScorer]
    unmatched_b: list[RunScorer]

    def pair_for(self, run_scorer_id: int | None) -> ComparePair | None:
        if not self.pairs:
            return None
        for pair in self.pairs:
            if pair.a.pk == run_scorer_id:
                return pair
        return self.pairs[0]

    def rows(self, *, pair: ComparePair, only: str = "") -> Any:
        """Result rows of run A for one scorer with run B's numbers, regressions first.

        badness > 0 means B is worse than A (a lower score for higher-is-better kinds,
        a higher one for lower-is-better kinds); pass→fail flips come first of all.
        """
        from django.db.models import FilteredRelation

        qs = (
            Result.objects.filter(run_id=self.run_a.pk, run_scorer_id=pair.a.pk)
            .select_related("item")
            .annotate(
                other=FilteredRelation(
                    "item__results",
                    condition=Q(item__results__run_scorer_id=pair.b.pk),
                )
            )
            .annotate(
                b_id=F("other__id"),
                b_status=F("other__status"),
                b_score=Case(
                    When(other__status=Result.Status.OK, then=F("other__final_score")),
                    default=None,
                    output_field=FloatField(),
                ),
                b_passed=F("other__final_passed"),
            )
            .annotate(
                a_score=Case(
                    When(status=Result.Status.OK, then=F("final_score")),
                    default=None,
                    output_field=FloatField(),
                ),
            )
            .annotate(delta=F("b_score") - F("a_score"))
            .annotate(
                badness=(F("delta") if pair.direction == "lower" else -F("delta")),
                flip=Case(
                    When(
                        status=Result.Status.OK,
                        other__status=Result.Status.OK,
                        final_passed=True,
                        other__final_passed=False,
                        then=Value(2),
                    ),
                    When(
                        status=Result.Status.OK,
                        other__status=Result.Status.OK,
                        final_passed=False,
                        other__final_passed=True,
                        then=Value(1),
                    ),
                    default=Value(0),
                    output_field=IntegerField(),
                ),
            )
        )
        if only == "regressions":
            qs = qs.filter(Q(badness__gt=0) | Q(flip=2))
        elif only == "improvements":
            qs = qs.filter(Q(badness__lt=0) | Q(flip=1))
        elif only == "flips":
            qs = qs.filter(flip__gt=0)
        elif only == "changed":
            qs = qs.exclude(badness=0, flip=0)
        return qs.order_by(
            Case(When(flip=2, then=Value(0)), default=Value(1)),
            F("badness").desc(nulls_last=True),
            "item__index",
            "id",
        )

    def page(
        self,
        *,
        number: int = 1,
        per_page: int = 50,
        only: str = "",
        scorer: int | None = None,
    ) -> Any:
        from django.core.paginator import Paginator

        pair = self.pair_for(scorer)
        if pair is None:
            return None
        return Paginator(self.rows(pair=pair, only=only), per_page).get_page(number)


def runs_compare(*, run_a: Run, run_b: Run) -> Comparison:
    """Pair the runs' scorers by (kind, name) and summarise the per-item final deltas.

    The caller checks access to both runs and that they share a dataset.
    """
    scorers_a = list(RunScorer.objects.filter(run=run_a).order_by("position", "id"))
    scorers_b = list(RunScorer.objects.filter(run=run_b).order_by("position", "id"))
    by_key = {(s.kind, s.name): s for s in scorers_b}
    pairs: list[ComparePair] = []
    matched_b: set[int] = set()
    unmatched_a: list[RunScorer] = []
    for sa in scorers_a:
        sb = by_key.get((sa.kind, sa.name))
        if sb is None or sb.pk in matched_b:
            unmatched_a.append(sa)
            continue
        matched_b.add(sb.pk)
        spec = KINDS.get(sa.kind)
        pairs.append(
            ComparePair(a=sa, b=sb, direction=spec.direction if spec else "higher")
        )
    comparison = Comparison(
        run_a=run_a,
        run_b=run_b,
        pairs=pairs,
        unmatched_a=unmatched_a,
        unmatched_b=[s for s in scorers_b if s.pk not in matched_b],
    )
    for pair in pairs:
        both = Q(delta__isnull=False)
        row = (
            comparison.rows(pair=pair)
            .order_by()
            .aggregate(
                n=Count("id"),
                both_ok=Count("id", filter=both),
                regressions=Count("id", filter=Q(badness__gt=0)),
                improvements=Count("id", filter=Q(badness__lt=0)),
                unchanged=Count("id", filter=Q(badness=0)),
                pass_to_fail=Count("id", filter=Q(flip=2)),
                fail_to_pass=Count("id", filter=Q(flip=1)),
                a_mean=Avg("a_score", filter=both),
                b_mean=Avg("b_score", filter=both),
                mean_delta=Avg("delta"),
                a_pass=Count("id", filter=both & Q(final_passed=True)),
                b_pass=Count("id", filter=both & Q(b_passed=True)),
            )
        )
        # Each aggregate is a field of the pair, but the pass counts: they become rates.
        for name, value in row.items():
            if name not in ("a_pass", "b_pass"):
                setattr(pair, name, value)
        pair.missing = pair.n - pair.both_ok
        pair.a_pass_rate = _ratio(row["a_pass"], pair.both_ok)
        pair.b_pass_rate = _ratio(row["b_pass"], pair.both_ok)
    return comparison
