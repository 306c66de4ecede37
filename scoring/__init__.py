"""evalsite's framework-free scoring library.

Plain Python: no Django, Celery, Ninja or evalsite imports. The formulas,
rounding and pass rules are those of SCORERS.md.
"""

from __future__ import annotations

from scoring.analysis import parse_factuality_reply, validate_analysis
from scoring.cache import AsyncJudgeCache, InMemoryCache, JudgeCache, cache_key
from scoring.client import StepRecord
from scoring.errors import (
    AnalysisError,
    CaseError,
    JudgeError,
    OptionsError,
    ScoringError,
    UnknownKindError,
)
from scoring.formulas import compute_score, passes, round_half_up
from scoring.judge import (
    JudgeResult,
    ajudge_case,
    estimate_tokens,
    judge_case,
    make_async_client,
    make_client,
    preview_prompts,
)
from scoring.options import options_schema, validate_options
from scoring.overrides import apply_override, get_path, overridable_count
from scoring.ranges import clamp_score, score_bounds, score_in_range
from scoring.registry import KINDS, LLM_KINDS, TEXT_KINDS, KindSpec
from scoring.textkinds import analyze_text
from scoring.types import Case

__all__ = [
    "KINDS",
    "LLM_KINDS",
    "TEXT_KINDS",
    "AnalysisError",
    "Case",
    "CaseError",
    "JudgeError",
    "KindSpec",
    "OptionsError",
    "ScoringError",
    "UnknownKindError",
    "analyze_text",
    "apply_override",
    "clamp_score",
    "compute_score",
    "get_path",
    "options_schema",
    "overridable_count",
    "parse_factuality_reply",
    "passes",
    "round_half_up",
    "score_bounds",
    "score_in_range",
    "validate_analysis",
    "validate_options",
    "AsyncJudgeCache",
    "InMemoryCache",
    "JudgeCache",
    "JudgeResult",
    "StepRecord",
    "ajudge_case",
    "cache_key",
    "estimate_tokens",
    "judge_case",
    "make_async_client",
    "make_client",
    "preview_prompts",
]
