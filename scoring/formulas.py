"""Pure score functions: analysis + options -> score, exactly as SCORERS.md.

Every ``score_<kind>`` takes an analysis already validated by
``validate_analysis`` and options already merged by ``validate_options``;
``compute_score`` and ``passes`` are the public entry points that validate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from scoring.analysis import validate_analysis
from scoring.errors import AnalysisError
from scoring.kinds_agent import AGENT_SCORE_FUNCTIONS
from scoring.kinds_rag import SCORE_FUNCTIONS as RAG_SCORE_FUNCTIONS
from scoring.options import check_kind, validate_options
from scoring.ranges import score_in_range
from scoring.registry import KINDS

__all__ = [
    "RELEVANCE_WEIGHTS",
    "SCORE_FUNCTIONS",
    "compute_score",
    "passes",
    "round_half_up",
]

_EPSILON = 2.220446049250313e-16

RELEVANCE_WEIGHTS: dict[str, float] = {
    "high": 1.0,
    "medium": 0.7,
    "low": 0.3,
    "none": 0.0,
}

_CATEGORY_KEYS: dict[str, str] = {
    "A": "subset",
    "B": "superset",
    "C": "agree",
    "D": "disagree",
    "E": "differ_but_factual",
}


def round_half_up(x: float) -> float:
    """Round half up to 2 decimals: ``floor((x + 2.220446049250313e-16) * 100 + 0.5) / 100``.

    0.625 -> 0.63 and 0.125 -> 0.13 (Python's ``round`` gives 0.62 / 0.12).
    """
    return math.floor((x + _EPSILON) * 100 + 0.5) / 100


def _share_of_yes(verdicts: list[dict[str, Any]], scale: float) -> float:
    if not verdicts:
        return 0.0
    yes = sum(1 for v in verdicts if v["verdict"] == "yes")
    return round_half_up(yes / len(verdicts) * scale)


def score_faithfulness(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """yes / N x scale; no verdicts -> 0; unsure counts as unsupported."""
    return _share_of_yes(analysis["verdicts"], options["scale"])


def score_hallucination(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """yes (= hallucinated) / N x scale; no verdicts -> 0. Lower is better."""
    return _share_of_yes(analysis["verdicts"], options["scale"])


def score_bias(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """yes (= biased) / N x scale; no verdicts -> 0. Lower is better."""
    return _share_of_yes(analysis["verdicts"], options["scale"])


def score_toxicity(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """yes (= toxic) / N x scale; no verdicts -> 0 (Mastra: 1). Lower is better."""
    return _share_of_yes(analysis["verdicts"], options["scale"])


def score_context_relevance(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """Weighted relevance minus unused-high and missing-context penalties."""
    scale = options["scale"]
    if analysis.get("context_count") == 0:
        return round_half_up(1 * scale)
    evaluations = analysis["evaluations"]
    missing_items = analysis.get("missing_context") or []
    if not evaluations:
        return round_half_up((0 if missing_items else 1) * scale)
    penalties = options["penalties"]
    # Added left to right, like Mastra's reduce: Python 3.12's sum() compensates float
    # rounding and would differ in the last digits (4.73 vs 4.72 at scale 7).
    total = 0.0
    for evaluation in evaluations:
        total += RELEVANCE_WEIGHTS[evaluation["relevance"]]
    base = total / len(evaluations)
    unused_high = sum(
        1 for e in evaluations if e["relevance"] == "high" and not e["used"]
    )
    usage = unused_high * penalties["unused_high_relevance"]
    missing = min(
        len(missing_items) * penalties["missing_context_per_item"],
        penalties["max_missing_context_penalty"],
    )
    return round_half_up(max(0.0, base - usage - missing) * scale)


def score_context_precision(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """Mean average precision over the verdicts sorted by context_index."""
    verdicts = sorted(analysis["verdicts"], key=lambda v: v["context_index"])
    if not verdicts:
        return 0.0
    relevant = 0
    total = 0.0
    for position, verdict in enumerate(verdicts, 1):
        if verdict["verdict"] == "yes":
            relevant += 1
            total += relevant / position
    if relevant == 0:
        return 0.0
    return round_half_up(total / relevant * options["scale"])


def score_answer_relevancy(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """(yes + uncertainty_weight x unsure) / N x scale; no verdicts -> 0.

    The count is accumulated verdict by verdict (+1 for yes, +weight for unsure), as
    Mastra does: adding weight x unsure at once rounds differently (5 yes + 3 unsure,
    weight 0.3, scale 10: 7.38 verdict by verdict, 7.37 at once).
    """
    verdicts = analysis["verdicts"]
    if not verdicts:
        return 0.0
    weight = options["uncertainty_weight"]
    count = 0.0
    for verdict in verdicts:
        if verdict["verdict"] == "yes":
            count += 1
        elif verdict["verdict"] == "unsure":
            count += weight
    return round_half_up(count / len(verdicts) * options["scale"])


def score_factuality(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """category_scores[category] x scale, not rounded."""
    key = _CATEGORY_KEYS[analysis["category"]]
    return float(options["category_scores"][key] * options["scale"])


def score_custom_rubric(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """round2(score x scale)."""
    return round_half_up(analysis["score"] * options["scale"])


def score_imported(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """The other tool's score x scale, not rounded."""
    return float(analysis["score"] * options["scale"])


def score_text_ratio(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """Non-LLM kinds: the ratio ``analyze_text`` computed, scaled, not rounded."""
    return float(analysis["ratio"] * options["scale"])


SCORE_FUNCTIONS: dict[str, Callable[[dict[str, Any], dict[str, Any]], float]] = {
    "faithfulness": score_faithfulness,
    "hallucination": score_hallucination,
    "context_relevance": score_context_relevance,
    "context_precision": score_context_precision,
    "answer_relevancy": score_answer_relevancy,
    "bias": score_bias,
    "toxicity": score_toxicity,
    "factuality": score_factuality,
    "custom_rubric": score_custom_rubric,
    "content_similarity": score_text_ratio,
    "textual_difference": score_text_ratio,
    "keyword_coverage": score_text_ratio,
    "completeness": score_text_ratio,
    "tone_consistency": score_text_ratio,
    "tool_call_accuracy": score_text_ratio,
    "trajectory_accuracy": score_text_ratio,
    **AGENT_SCORE_FUNCTIONS,
    "trajectory": score_text_ratio,
    **RAG_SCORE_FUNCTIONS,
    "imported": score_imported,
}


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
