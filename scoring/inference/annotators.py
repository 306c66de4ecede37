"""May this judge replace a reviewer? The alternative annotator test (Calderon,
Reichart & Dror, ACL 2025).

For each reviewer j in turn, on the results j answered together with at least one
other reviewer:
1. the alignment of an answer with the *other* reviewers of the result: the share of
   them it equals (verdicts), or minus its root-mean-square distance to them (scores);
2. per result, W_judge = 1 if the judge's alignment ≥ j's, W_human = 1 if j's ≥ the
   judge's (a tie counts for both); ρ_judge and ρ_human are their means;
3. a one-sided paired t-test of H0: ρ_judge ≤ ρ_human − ε against H1: ρ_judge >
   ρ_human − ε, on d = W_human − W_judge (H1: mean(d) < ε).
The p-values of all reviewers are corrected together by Benjamini–Yekutieli at level
α; the winning rate ω is the share of reviewers whose null is rejected, and the judge
may replace a reviewer when ω ≥ 0.5.

This is the procedure of the authors' reference implementation (the alt_test
function of their AltTest repository): ties count for both sides, results need two
human answers, and reviewers with fewer than 30 results are skipped (the authors'
minimum for the t-test's normality). Unlike it, this refuses when fewer than two
reviewers remain instead of dividing by zero, and a reviewer with no spread in d gets
p = 0 or 1 from the sign of mean(d) − ε. The t-test uses scoring.stats's Student t
(plain Python), so no scipy.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Literal

from scoring.inference.errors import NotEnoughData
from scoring.stats import t_sf

EPSILON = 0.1
ALPHA = 0.05
WINNING_RATE_TO_PASS = 0.5
# Below this many results per reviewer the paired t-test's normal approximation of
# a mean of {−1, 0, 1} values is not worth stating.
MIN_ITEMS_PER_REVIEWER = 30
MIN_REVIEWERS = 2
RECOMMENDED_REVIEWERS = 3

Scale = Literal["categorical", "numeric"]
Answer = Hashable | float


class NotEnoughAnnotations(NotEnoughData):
    """Too few results with two or more human answers, or too few reviewers with
    enough of them. more_items maps each short reviewer to the results it still
    needs; more_reviewers is how many more qualifying reviewers are needed."""

    def __init__(
        self, message: str, *, more_items: Mapping[Hashable, int], more_reviewers: int
    ) -> None:
        super().__init__(message)
        self.more_items = dict(more_items)
        self.more_reviewers = more_reviewers


@dataclass(frozen=True)
class ReviewerOutcome:
    """The test with reviewer `reviewer` left out."""

    reviewer: Hashable
    items: int
    rho_judge: float  # share of results where the judge aligns at least as well
    rho_human: float  # share where the reviewer aligns at least as well
    t: float
    p_value: float
    rejected: bool  # H0 rejected after the Benjamini–Yekutieli correction: judge wins


@dataclass(frozen=True)
class AlternativeAnnotatorTest:
    epsilon: float
    alpha: float
    reviewers: tuple[ReviewerOutcome, ...]
    winning_rate: float  # ω
    passed: bool  # ω ≥ 0.5
    advantage: float  # mean ρ_judge over the reviewers
    items: int  # results with the judge's answer and two or more human ones
    skipped: tuple[
        tuple[Hashable, int], ...
    ]  # reviewers with too few results, and theirs
    few_reviewers: bool  # fewer than 3 reviewers tested: the paper recommends 3 or more


def _alignment(answer: Answer, others: list[Answer], scale: Scale) -> float:
    if scale == "categorical":
        return sum(1 for other in others if other == answer) / len(others)
    value = _number(answer)
    return -math.sqrt(sum((value - _number(o)) ** 2 for o in others) / len(others))


def _number(answer: Answer) -> float:
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        raise TypeError(f"a numeric scale needs numbers, not {answer!r}")
    return float(answer)


def _one_sided_p(differences: list[int], epsilon: float) -> tuple[float, float]:
    """t and p of H0: mean(d) ≥ ε against H1: mean(d) < ε. With no spread the mean
    decides: p = 0 below ε, else 1."""
    n = len(differences)
    mean = sum(differences) / n
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    if variance == 0.0:
        if mean < epsilon:
            return -math.inf, 0.0
        return math.inf, 1.0
    t = (mean - epsilon) / math.sqrt(variance / n)
    return t, t_sf(-t, n - 1)


def benjamini_yekutieli(p_values: list[float], alpha: float) -> list[bool]:
    """Which hypotheses BY rejects at level α (valid under any dependence): the k
    smallest, for the largest k with p_(k) ≤ k α / (m · Σ_{i≤m} 1/i)."""
    m = len(p_values)
    if m == 0:
        return []
    harmonic = sum(1.0 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: p_values[i])
    cutoff = 0
    for rank, index in enumerate(order, start=1):
        if p_values[index] <= rank * alpha / (m * harmonic):
            cutoff = rank
    rejected = [False] * m
    for index in order[:cutoff]:
        rejected[index] = True
    return rejected


def alternative_annotator_test(
    judge: Mapping[Hashable, Answer],
    humans_by_item: Mapping[Hashable, Mapping[Hashable, Answer]],
    *,
    epsilon: float = EPSILON,
    alpha: float = ALPHA,
    scale: Scale = "categorical",
    min_items: int = MIN_ITEMS_PER_REVIEWER,
) -> AlternativeAnnotatorTest:
    """The alternative annotator test of the judge against the reviewers.

    judge[item] is the judge's answer; humans_by_item[item][reviewer] the reviewers'.
    scale "categorical" compares answers for equality (verdicts, labels), "numeric"
    by distance (scores). Reviewers with fewer than min_items results shared with
    another reviewer are skipped (and listed); raises NotEnoughAnnotations, saying
    what is missing, when fewer than two reviewers remain.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie in (0, 1)")
    if min_items < 2:
        raise ValueError("min_items must be at least 2 (a t-test needs two results)")
    shared = {
        item: answers
        for item, answers in humans_by_item.items()
        if item in judge and len(answers) >= 2
    }
    if not shared:
        raise NotEnoughAnnotations(
            "the alternative annotator test needs results with the judge's answer and at "
            f"least 2 human answers (3 is better); there are none: {MIN_REVIEWERS} reviewers "
            f"must each answer at least {min_items} of the same results",
            more_items={},
            more_reviewers=MIN_REVIEWERS,
        )
    by_reviewer: dict[Hashable, list[Hashable]] = {}
    for item, answers in shared.items():
        for reviewer in answers:
            by_reviewer.setdefault(reviewer, []).append(item)
    eligible = {r: items for r, items in by_reviewer.items() if len(items) >= min_items}
    skipped = tuple(
        (r, len(items)) for r, items in by_reviewer.items() if len(items) < min_items
    )
    if len(eligible) < MIN_REVIEWERS:
        short = sorted(skipped, key=lambda pair: -pair[1])[
            : MIN_REVIEWERS - len(eligible)
        ]
        more_items = {reviewer: min_items - count for reviewer, count in short}
        missing = MIN_REVIEWERS - len(eligible) - len(short)
        parts = [
            f"{reviewer!s} needs {more} more" for reviewer, more in more_items.items()
        ]
        if missing:
            parts.append(f"{missing} more reviewer(s) needed")
        raise NotEnoughAnnotations(
            f"the alternative annotator test needs at least {MIN_REVIEWERS} reviewers "
            f"(3 is better) with {min_items} results each that another reviewer also "
            f"answered; {len(eligible)} qualify: " + "; ".join(parts),
            more_items=more_items,
            more_reviewers=missing,
        )

    rows: list[tuple[Hashable, int, float, float, float, float]] = []
    for reviewer, items in eligible.items():
        differences: list[int] = []
        wins_judge = wins_human = 0
        for item in items:
            answers = shared[item]
            others = [answer for other, answer in answers.items() if other != reviewer]
            judge_alignment = _alignment(judge[item], others, scale)
            human_alignment = _alignment(answers[reviewer], others, scale)
            w_judge = int(judge_alignment >= human_alignment)
            w_human = int(human_alignment >= judge_alignment)
            wins_judge += w_judge
            wins_human += w_human
            differences.append(w_human - w_judge)
        t, p = _one_sided_p(differences, epsilon)
        rows.append(
            (
                reviewer,
                len(items),
                wins_judge / len(items),
                wins_human / len(items),
                t,
                p,
            )
        )

    rejected = benjamini_yekutieli([row[5] for row in rows], alpha)
    outcomes = tuple(
        ReviewerOutcome(r, count, rho_j, rho_h, t, p, rej)
        for (r, count, rho_j, rho_h, t, p), rej in zip(rows, rejected, strict=True)
    )
    winning_rate = sum(rejected) / len(outcomes)
    return AlternativeAnnotatorTest(
        epsilon=epsilon,
        alpha=alpha,
        reviewers=outcomes,
        winning_rate=winning_rate,
        passed=winning_rate >= WINNING_RATE_TO_PASS,
        advantage=sum(o.rho_judge for o in outcomes) / len(outcomes),
        items=len(shared),
        skipped=skipped,
        few_reviewers=len(outcomes) < RECOMMENDED_REVIEWERS,
    )
