"""Agent scorer kinds judged by an LLM: analysis shapes and pure score functions.

rubric (Mastra ``createRubricScorer``), multi_turn_judge (``createMultiTurnJudgeScorer``),
tool_call_accuracy_llm (``createToolCallAccuracyScorerLLM``) and trajectory_accuracy_llm
(``createTrajectoryAccuracyScorerLLM``), @mastra/evals 1.10.2. The judge steps live in
``scoring.kinds_agent_prompts``; the formulas are in scoring/SCORERS.md.

This module imports nothing from the rest of ``scoring`` at import time, so that
``scoring.analysis`` and ``scoring.formulas`` can register its models and functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AGENT_ANALYSIS_MODELS",
    "AGENT_LLM_KINDS",
    "AGENT_SCORE_FUNCTIONS",
    "score_multi_turn_judge",
    "score_rubric",
    "score_tool_call_accuracy_llm",
    "score_trajectory_accuracy_llm",
]

AGENT_LLM_KINDS = (
    "rubric",
    "multi_turn_judge",
    "tool_call_accuracy_llm",
    "trajectory_accuracy_llm",
)


class _Model(BaseModel):
    # Extra keys are kept, as in scoring.analysis: a validated analysis loses nothing.
    model_config = ConfigDict(extra="allow")


# --- rubric -----------------------------------------------------------------
class CriterionVerdict(_Model):
    criterion: str = ""
    required: bool = True
    satisfied: bool
    reason: str = ""


class RubricAnalysis(_Model):
    criteria: list[CriterionVerdict]
    reason: str = ""


# --- multi_turn_judge -------------------------------------------------------
class MultiTurnAnalysis(_Model):
    satisfied: bool
    reason: str = ""


# --- tool_call_accuracy_llm -------------------------------------------------
class ToolEvaluation(_Model):
    tool: str = ""
    appropriate: bool
    reason: str = ""


class ToolCallLLMAnalysis(_Model):
    evaluations: list[ToolEvaluation]
    missing_tools: list[str] = []
    reason: str = ""


# --- trajectory_accuracy_llm ------------------------------------------------
class StepEvaluation(_Model):
    name: str = ""
    necessary: bool
    in_order: bool
    reason: str = ""


class TrajectoryLLMAnalysis(_Model):
    steps: list[StepEvaluation]
    missing_steps: list[str] = []
    extra_steps: list[str] = []
    reason: str = ""


AGENT_ANALYSIS_MODELS: dict[str, type[BaseModel]] = {
    "rubric": RubricAnalysis,
    "multi_turn_judge": MultiTurnAnalysis,
    "tool_call_accuracy_llm": ToolCallLLMAnalysis,
    "trajectory_accuracy_llm": TrajectoryLLMAnalysis,
}


# --- formulas ---------------------------------------------------------------


def _round2(x: float) -> float:
    from scoring.formulas import round_half_up  # formulas imports this module

    return round_half_up(x)


def score_rubric(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """1 x scale when every required criterion is met (every criterion, when none is
    required), else 0; no criteria: 1 x scale. Not rounded (Mastra does not round it)."""
    criteria = analysis["criteria"]
    if not criteria:
        return float(options["scale"])
    required = [c for c in criteria if c["required"]]
    met = all(c["satisfied"] for c in (required or criteria))
    return float((1 if met else 0) * options["scale"])


def score_multi_turn_judge(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """1 x scale when the conversation satisfies the criterion, else 0. Not rounded."""
    return float((1 if analysis["satisfied"] else 0) * options["scale"])


def score_tool_call_accuracy_llm(
    analysis: dict[str, Any], options: dict[str, Any]
) -> float:
    """round2(appropriate calls / evaluated calls x scale); no evaluations: 0 when the
    judge names missing tools, else 1 (x scale)."""
    evaluations = analysis["evaluations"]
    if not evaluations:
        return _round2((0 if analysis["missing_tools"] else 1) * options["scale"])
    appropriate = sum(1 for e in evaluations if e["appropriate"])
    return _round2(appropriate / len(evaluations) * options["scale"])


def trajectory_llm_ratio(analysis: dict[str, Any]) -> float:
    """Mastra's unrounded, unscaled trajectory score (see SCORERS.md)."""
    steps = analysis["steps"]
    missing = len(analysis["missing_steps"])
    if not steps:
        if missing:
            return 0.0
        return 0.5 if analysis["extra_steps"] else 1.0
    total = len(steps)
    necessary = sum(1 for s in steps if s["necessary"])
    ordered = sum(1 for s in steps if s["in_order"])
    penalty = missing / (total + missing) if missing else 0.0
    score = necessary / total * 0.6 + ordered / total * 0.3 - penalty * 0.1
    return max(0.0, min(1.0, score))


def score_trajectory_accuracy_llm(
    analysis: dict[str, Any], options: dict[str, Any]
) -> float:
    """round2((0.6 x necessary share + 0.3 x in-order share - 0.1 x missing share),
    clamped to [0, 1], x scale); a perfect trajectory scores 0.9 (Mastra's weights)."""
    return _round2(trajectory_llm_ratio(analysis) * options["scale"])


AGENT_SCORE_FUNCTIONS: dict[str, Callable[[dict[str, Any], dict[str, Any]], float]] = {
    "rubric": score_rubric,
    "multi_turn_judge": score_multi_turn_judge,
    "tool_call_accuracy_llm": score_tool_call_accuracy_llm,
    "trajectory_accuracy_llm": score_trajectory_accuracy_llm,
}
