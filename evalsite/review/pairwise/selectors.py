"""Pairwise review reads: access, the matched pairs of two runs, who
answered what (and who may see it), progress, win rates and agreement on preferences.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser, User
from django.core.cache import cache
from django.db.models import Count, Max, Q, QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.datasets.matching.selectors import (
    DEFAULT_KEY,
    MatchMode,
    MatchSpec,
    items_match,
)
from evalsite.evals.models import Run
from evalsite.review.models import PairwiseItem, Preference, ReviewQueue
from scoring.agreement import (
    Agreement,
    agreement_alpha,
    agreement_kappa_pairs,
    agreement_percent,
    krippendorff_alpha,
    percent_agreement,
)
from scoring.pairwise import WinRate, wilson_interval, win_rate_bootstrap, win_rates

# Bootstrap resamples behind each agreement interval (as selectors.reviews.RESAMPLES).
RESAMPLES = 200
# Resamples of the pairs behind the win-rate interval, as many as the agreement
# intervals take (selectors.reviews.RESAMPLES): about 0.3 s at a queue's 5,000 pairs
# when the figures are not cached (1,000 took 1.5 s).
PAIR_RESAMPLES = 200
# The longest match value kept on a pair (a key, or the start of the input).
MATCH_VALUE_MAX = 200


def pairwise_get_for_user(
    *,
    user: User | AnonymousUser,
    pk: int,
    write: bool = False,
    project_id: int | None = None,
) -> ReviewQueue:
    """A pairwise queue of a project the user belongs to: 404 for outsiders, for
    another project's id under this project's URL and for a queue of another kind;
    403 by role (write needs a reviewer)."""
    queue = (
        ReviewQueue.objects.select_related("run", "run_b", "project")
        .filter(pk=pk, kind=ReviewQueue.Kind.PAIRWISE)
        .first()
    )
    if queue is None or (project_id is not None and queue.project_id != project_id):
        raise Http404("No such pairwise queue.")
    queue.project = project_get_for_user(user=user, pk=queue.project_id, write=write)
    return queue


@dataclass
class PairMatch:
    """The matched items of runs A and B: (item A id, item B id, match value) per
    pair, in A's item order, and what did not pair."""

    pairs: list[tuple[int, int]]
    unmatched_a: int
    unmatched_b: int
    no_key: int
    same_dataset: bool


def pairwise_match(*, run_a: Run, run_b: Run, mode: str, key: str) -> PairMatch:
    """Match the runs' items by a metadata key or by identical input (the rule of
    selectors.matching, used by compare too); a key held by several items of one run
    is refused with the items named. Raises ApplicationError on a bad rule."""
    # MatchSpec refuses an unknown mode and an empty key with a clear error.
    spec = MatchSpec(
        mode=cast(MatchMode, mode), key=key if mode == "key" else DEFAULT_KEY
    )
    matching = items_match(datasets=[run_a.dataset_id, run_b.dataset_id], spec=spec)
    matching.raise_for_duplicates(labels=["run A", "run B"])
    return PairMatch(
        pairs=[(m[0], m[1]) for m in matching.matched],
        unmatched_a=len(matching.only_in_a),
        unmatched_b=len(matching.only_in_b),
        no_key=sum(len(side) for side in matching.no_key),
        same_dataset=matching.same_dataset,
    )


def pair_at(*, queue: ReviewQueue, position: int) -> PairwiseItem | None:
    return (
        PairwiseItem.objects.select_related("item_a", "item_b")
        .filter(queue=queue, position=position)
        .first()
    )


def pair_preferences(*, pair: PairwiseItem) -> list[Preference]:
    return list(
        Preference.objects.filter(pair=pair)
        .select_related("reviewer", "guideline")
        .order_by("created_at", "id")
    )


def pair_complete(*, queue: ReviewQueue, pair: PairwiseItem) -> bool:
    return pair.answers >= queue.overlap


def preferences_visible(
    *,
    queue: ReviewQueue,
    pair: PairwiseItem,
    preferences: Iterable[Preference],
    user: User | AnonymousUser,
) -> bool:
    """Blind: a reviewer sees the others' answers (and which run is which) only once
    they have answered themselves, or once the pair has every answer it takes."""
    if pair_complete(queue=queue, pair=pair):
        return True
    return any(p.reviewer_id == user.pk for p in preferences)


def preferences_visible_to(*, queue: ReviewQueue, user: User) -> QuerySet[Preference]:
    """Every answer in the queue the user may see by the blind rule of
    `preferences_visible`: on pairs they answered, on complete pairs, and their own."""
    answered = Preference.objects.filter(queue=queue, reviewer=user).values("pair_id")
    return (
        Preference.objects.filter(queue=queue)
        .filter(Q(pair__answers__gte=queue.overlap) | Q(pair_id__in=answered))
        .select_related("pair", "reviewer", "guideline")
        .order_by("pair__position", "created_at", "id")
    )


def pairwise_progress(*, queue: ReviewQueue, user: User) -> dict[str, int]:
    """Pairs in the queue, pairs with every answer, and the user's own answers."""
    counts = PairwiseItem.objects.filter(queue=queue).aggregate(
        total=Count("id"),
        complete=Count("id", filter=Q(answers__gte=queue.overlap)),
    )
    mine = Preference.objects.filter(queue=queue, reviewer=user).count()
    return {"total": counts["total"], "complete": counts["complete"], "mine": mine}


def pairwise_next_for(*, queue: ReviewQueue, user: User, after: int = 0) -> int | None:
    """Position of the next pair still taking answers that `user` has not answered
    (after `after`, wrapping to the start); None when there is none."""
    answered = Preference.objects.filter(queue=queue, reviewer=user).values("pair_id")
    open_pairs = PairwiseItem.objects.filter(
        queue=queue, answers__lt=queue.overlap
    ).exclude(pk__in=answered)
    later = open_pairs.filter(position__gt=after).order_by("position")
    position = later.values_list("position", flat=True).first()
    if position is None:
        position = (
            open_pairs.order_by("position").values_list("position", flat=True).first()
        )
    return position


def rates_visible(*, queue: ReviewQueue, user: User) -> bool:
    """Whether `user` sees the queue's win rates. They say which run is ahead, which
    would nudge a reviewer who still has pairs to answer; owners and adjudicators
    (who run the study), viewers (who answer nothing) and reviewers with nothing
    left to answer see them. Agreement figures give no side away and are shown to
    every member."""
    membership = queue.project.membership
    if membership.can_adjudicate or not membership.can_review:
        return True
    return pairwise_next_for(queue=queue, user=user) is None


def pairwise_list_for_run(*, run: Run) -> QuerySet[ReviewQueue]:
    """The pairwise queues a run takes part in, as run A or run B, newest first."""
    return (
        ReviewQueue.objects.filter(kind=ReviewQueue.Kind.PAIRWISE, archived=False)
        .filter(Q(run=run) | Q(run_b=run))
        .select_related("run", "run_b", "project")
        .order_by("-created_at", "-id")
    )


def pairwise_list_for_project(*, project_id: int) -> QuerySet[ReviewQueue]:
    return (
        ReviewQueue.objects.filter(
            project_id=project_id, kind=ReviewQueue.Kind.PAIRWISE, archived=False
        )
        .select_related("run", "run_b")
        .order_by("-created_at", "-id")
    )


# ------------------------------------------------------------------ figures


@dataclass(frozen=True)
class SideBias:
    """How often a decisive answer chose the output shown on the left (0.5: none)."""

    left: int
    right: int
    low: float | None
    high: float | None

    @property
    def decisive(self) -> int:
        return self.left + self.right

    @property
    def share(self) -> float | None:
        return self.left / self.decisive if self.decisive else None


@dataclass
class PairwiseFigures:
    """A pairwise queue's figures: each run's win rate (Wilson 95 % interval on the
    decisive answers, ties shown beside), the left/right bias, and agreement between
    reviewers on their preferences (nominal: A, B, tie)."""

    a: WinRate
    b: WinRate
    pairs_answered: int
    # Run A's win rate interval with pairs resampled (answers on one pair move
    # together); run B's is its mirror.
    a_pairs_interval: tuple[float | None, float | None]
    side: SideBias
    reviewers: int
    percent: Agreement
    alpha: Agreement
    kappa_pairs: list[tuple[str, str, Agreement]] = field(default_factory=list)
    per_reviewer: list[dict[str, Any]] = field(default_factory=list)

    @property
    def b_pairs_interval(self) -> tuple[float | None, float | None]:
        low, high = self.a_pairs_interval
        if low is None or high is None:
            return None, None
        return 1 - high, 1 - low

    def as_dict(self) -> dict[str, Any]:
        pairs_ci = {"a": self.a_pairs_interval, "b": self.b_pairs_interval}

        def rate(w: WinRate, side: str) -> dict[str, Any]:
            low, high = w.interval
            return {
                "wins": w.wins,
                "losses": w.losses,
                "ties": w.ties,
                "answers": w.answers,
                "win_rate": w.rate,
                "ci_low": low,
                "ci_high": high,
                "win_rate_ties_half": w.tie_half,
                "tie_share": w.tie_share,
                "ci_pairs_low": pairs_ci[side][0],
                "ci_pairs_high": pairs_ci[side][1],
            }

        def fig(a: Agreement) -> dict[str, Any]:
            return {
                "value": a.value,
                "items": a.items,
                "ci_low": a.ci_low,
                "ci_high": a.ci_high,
            }

        return {
            "method": WIN_RATE_METHOD,
            "a": rate(self.a, "a"),
            "b": rate(self.b, "b"),
            "pairs_answered": self.pairs_answered,
            "left_right": {
                "left": self.side.left,
                "right": self.side.right,
                "left_share": self.side.share,
                "ci_low": self.side.low,
                "ci_high": self.side.high,
            },
            "agreement": {
                "reviewers": self.reviewers,
                "percent_agreement": fig(self.percent),
                "alpha": fig(self.alpha),
                "kappa_pairs": [
                    {"reviewers": [a, b], **fig(k)} for a, b, k in self.kappa_pairs
                ],
            },
            "per_reviewer": self.per_reviewer,
        }


WIN_RATE_METHOD = (
    "Win rate = wins / (wins + losses) over every reviewer's answer, ties left out "
    "and shown beside it; 95 % Wilson score interval over the answers. Answers on "
    "one pair by several reviewers are not independent, so the Wilson interval is "
    "then optimistic: the 95 % bootstrap interval over pairs (200 resamples of the "
    "pairs, each with all its answers) accounts for it. Agreement: percent of agreeing reviewer pairs and Krippendorff's "
    "alpha (nominal: A, B, tie) over pairs with two or more answers, with 95 % "
    "bootstrap intervals over pairs."
)


def pairwise_figures(*, queue: ReviewQueue) -> PairwiseFigures:
    """The queue's figures, cached until an answer is added or changed."""
    answers = Preference.objects.filter(queue=queue, reviewer__isnull=False)
    state = answers.aggregate(n=Count("id"), last=Max("updated_at"), top=Max("id"))
    last = state["last"].isoformat() if state["last"] else "-"
    key = f"pairwise:v1:{queue.pk}:{state['n']}:{state['top']}:{last}"
    cached = cache.get(key)
    if isinstance(cached, PairwiseFigures):
        return cached
    figures = _figures(answers)
    cache.set(key, figures, 3600)
    return figures


def _figures(answers: QuerySet[Preference]) -> PairwiseFigures:
    rows = list(
        answers.order_by("pair_id", "id").values_list(
            "pair_id", "reviewer__username", "choice", "side", "seconds"
        )
    )
    choices: Counter[str] = Counter()
    sides: Counter[str] = Counter()
    ratings: dict[Hashable, dict[Hashable, Hashable | float]] = defaultdict(dict)
    mine: dict[str, Counter[str]] = defaultdict(Counter)
    per_pair: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for pair_id, username, choice, side, _seconds in rows:
        choices[choice] += 1
        sides[side] += 1
        ratings[pair_id][username] = choice
        mine[username][choice] += 1
        # Every answered pair is a unit of the resampling, ties-only ones too.
        counts = per_pair[pair_id]
        if choice == Preference.Choice.A:
            counts[0] += 1
        elif choice == Preference.Choice.B:
            counts[1] += 1
    a, b = win_rates(
        a=choices[Preference.Choice.A],
        b=choices[Preference.Choice.B],
        tie=choices[Preference.Choice.TIE],
    )
    left, right = sides[Preference.Side.LEFT], sides[Preference.Side.RIGHT]
    low, high = wilson_interval(left, left + right)
    kappa = agreement_kappa_pairs(ratings, resamples=RESAMPLES)
    return PairwiseFigures(
        a=a,
        b=b,
        pairs_answered=len(ratings),
        a_pairs_interval=win_rate_bootstrap(
            [(a_wins, b_wins) for a_wins, b_wins in per_pair.values()],
            resamples=PAIR_RESAMPLES,
        ),
        side=SideBias(left=left, right=right, low=low, high=high),
        reviewers=len(mine),
        percent=agreement_percent(ratings, resamples=RESAMPLES),
        alpha=agreement_alpha(ratings, "nominal", resamples=RESAMPLES),
        kappa_pairs=[(str(x), str(y), k) for (x, y), k in sorted(kappa.items())],
        per_reviewer=[
            {
                "username": username,
                "answered": sum(counts.values()),
                "a": counts[Preference.Choice.A],
                "b": counts[Preference.Choice.B],
                "tie": counts[Preference.Choice.TIE],
            }
            for username, counts in sorted(mine.items())
        ],
    )


def pairwise_quick_agreement(*, queue_id: int) -> dict[str, Any]:
    """Percent agreement and Krippendorff's alpha (nominal) of a queue's preferences
    from its pairs' answer counts, grouped by shape (no answers read): cheap enough
    to send back with every answer."""
    shapes = (
        PairwiseItem.objects.filter(queue_id=queue_id, answers__gte=2)
        .values_list("answers_a", "answers_b", "answers_tie")
        .annotate(n=Count("id"))
        .order_by()
    )
    units: list[list[Hashable | float]] = []
    for a, b, tie, n in shapes:
        unit: list[Hashable | float] = [*(["a"] * a), *(["b"] * b), *(["tie"] * tie)]
        units.extend([unit] * n)
    return {
        "percent": percent_agreement(units),
        "alpha": krippendorff_alpha(units, "nominal"),
        "items": len(units),
    }
