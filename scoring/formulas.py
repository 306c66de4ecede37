"""Scores and the pass rule: analysis + options -> score, exactly as SCORERS.md.

Each kind's score function (in its module under ``scoring.kinds``) takes an analysis
already validated by ``validate_analysis`` and options already merged by
``validate_options``; ``compute_score`` and ``passes`` are the public entry points that
validate.
"""

from __future__ import annotations

from typing import Any

from scoring.analysis import validate_analysis
from scoring.errors import AnalysisError
from scoring.kinds.base import round_half_up
from scoring.options import check_kind, validate_options
from scoring.ranges import score_in_range
from scoring.registry import KINDS, SCORE_FUNCTIONS

__all__ = [
    "SCORE_FUNCTIONS",
    "compute_score",
    "passes",
    "round_half_up",
]


def compute_score(
    kind: str, analysis: dict[str, Any], options: dict[str, Any] | None = None
) -> float:
    """The score of ``analysis`` for ``kind`` under ``options`` (merged with the defaults).

    Pure, no I/O. Raises ``UnknownKindError``, ``OptionsError`` or ``AnalysisError``
    (also for a score outside 0-scale, which no valid options give).
    """
    check_kind(kind)
    merged = validate_options(kind, options)
    validated = validate_analysis(kind, analysis)
    score = SCORE_FUNCTIONS[kind](validated, merged)
    # The options keep every formula within 0-scale; a score outside it would be a
    # formula's bug, and is refused here rather than stored (scoring/ranges.py).
    if not score_in_range(score, merged["scale"]):
        raise AnalysisError(
            f"{kind} gave the score {score!r}, outside 0-{merged['scale']:g} "
            "(the scale); no score is stored outside it",
            path="",
        )
    return score


def _at_least(score: float, bound: float) -> bool:
    # threshold x scale is a float product (0.7 x 10 = 7.000000000000001):
    # compare with a tolerance far below the 0.01 rounding step.
    return score >= bound - 1e-9 * max(1.0, abs(bound))


def _at_most(score: float, bound: float) -> bool:
    return score <= bound + 1e-9 * max(1.0, abs(bound))


def passes(
    kind: str,
    score: float,
    options: dict[str, Any] | None = None,
    *,
    analysis: dict[str, Any] | None = None,
) -> bool:
    """The pass rule of SCORERS.md.

    Higher-is-better: ``score >= threshold x scale``; lower-is-better (hallucination,
    bias, toxicity): ``score <= threshold x scale``. Factuality without a threshold:
    pass iff ``score > 0`` (promptfoo); with one, the higher-is-better rule.
    ``imported`` (another tool's grade): the tool's own pass, ``analysis["passed"]``,
    whatever the score (promptfoo's llm-rubric passes a 0.6 and may fail a 0.9);
    without the analysis, the higher-is-better rule.
    """
    check_kind(kind)
    merged = validate_options(kind, options)
    if kind == "imported" and analysis is not None:
        return bool(validate_analysis(kind, analysis)["passed"])
    threshold = merged["threshold"]
    if threshold is None:  # factuality's default: promptfoo's rule
        return score > 0
    bound = threshold * merged["scale"]
    if KINDS[kind].direction == "lower":
        return _at_most(score, bound)
    return _at_least(score, bound)
