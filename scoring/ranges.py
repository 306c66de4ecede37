"""The one range every score a result holds keeps to: 0 to the scorer's scale.

Whoever produced the score (a judge formula, factuality's category table, a reviewer's
override, a what-if rescore, another tool's file), it is a finite number from 0 to the
scale. Options are checked so that no formula can leave it (factuality's category
scores are 0-1, a documented difference from promptfoo, which takes any number);
``compute_score`` refuses a score outside it; overrides and rescores check it with
``score_in_range``; importers of tools that allow any score use ``clamp_score`` and
say so in their summary.
"""

from __future__ import annotations

import math

from scoring.errors import ScoringError

__all__ = ["clamp_score", "score_bounds", "score_in_range"]

# round_half_up adds this before rounding (scoring.formulas).
_EPSILON = 2.220446049250313e-16


def score_bounds(scale: float) -> tuple[float, float]:
    """The lowest and highest score a scorer of ``scale`` can hold: 0 and the scale,
    or the scale rounded half up to 2 decimals when that is higher (the rounded kinds
    give 0.34 for a perfect ratio at a scale of 0.335; rounding is monotonic, so no
    rounded score exceeds the rounded scale)."""
    rounded = math.floor((scale + _EPSILON) * 100 + 0.5) / 100
    return 0.0, max(float(scale), rounded)


def score_in_range(score: float, scale: float) -> bool:
    """True iff ``score`` is a finite number within ``score_bounds(scale)``."""
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return False
    try:
        number = float(score)
    except OverflowError:
        return False
    low, high = score_bounds(scale)
    return math.isfinite(number) and low <= number <= high


def clamp_score(score: float, scale: float) -> float:
    """``score`` moved into ``score_bounds(scale)``: for another tool's score that
    may be any number (promptfoo's). The caller keeps the tool's own pass and counts
    the clamped scores where the user sees them. Raises ``ScoringError`` for what is
    not a finite number: there is nothing to clamp."""
    if not isinstance(score, bool) and isinstance(score, (int, float)):
        try:
            number = float(score)
        except OverflowError:
            number = math.nan
        if math.isfinite(number):
            low, high = score_bounds(scale)
            return min(high, max(low, number)) + 0.0
    raise ScoringError(f"a score must be a finite number (got {score!r})")
