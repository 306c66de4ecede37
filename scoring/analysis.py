"""Analysis shapes (SCORERS.md) as pydantic models, one per kind.

The judge's JSON, or a reviewer-edited analysis, is validated here before any
score is computed: enum values are trimmed and lower-cased (the factuality
category upper-cased) before they are checked, and every error names its path
(``verdicts[2].verdict``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from scoring.errors import AnalysisError, UnknownKindError
from scoring.jstext import js_lower, js_strip
from scoring.kinds_agent import AGENT_ANALYSIS_MODELS
from scoring.kinds_rag import ANALYSIS_MODELS as RAG_ANALYSIS_MODELS

__all__ = [
    "ANALYSIS_MODELS",
    "format_path",
    "parse_factuality_reply",
    "validate_analysis",
]


def _trim_lower(value: Any) -> Any:
    return js_lower(js_strip(value)) if isinstance(value, str) else value


def _trim_upper(value: Any) -> Any:
    return js_strip(value).upper() if isinstance(value, str) else value


def _finite_number(value: Any) -> Any:
    # JSON true/false must not sneak in as 1/0, and NaN/inf are never scores.
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_trim_lower)]
YesNoUnsure = Annotated[Literal["yes", "no", "unsure"], BeforeValidator(_trim_lower)]
Relevance = Annotated[
    Literal["high", "medium", "low", "none"], BeforeValidator(_trim_lower)
]
Category = Annotated[Literal["A", "B", "C", "D", "E"], BeforeValidator(_trim_upper)]
Ratio = Annotated[float, BeforeValidator(_finite_number), Field(ge=0, le=1)]


class _Model(BaseModel):
    # Extra keys are kept (e.g. "context_count", or details a judge adds) so
    # that a validated analysis loses nothing.
    model_config = ConfigDict(extra="allow")


# --- faithfulness -----------------------------------------------------------
class ClaimVerdict(_Model):
    claim: str = ""
    verdict: YesNoUnsure
    reason: str = ""


class FaithfulnessAnalysis(_Model):
    claims: list[str] = []
    verdicts: list[ClaimVerdict]


# --- hallucination ----------------------------------------------------------
class HallucinationVerdict(_Model):
    claim: str = ""
    verdict: YesNo  # yes = the claim IS a hallucination
    reason: str = ""


class HallucinationAnalysis(_Model):
    claims: list[str] = []
    verdicts: list[HallucinationVerdict]


# --- context_relevance ------------------------------------------------------
class ContextEvaluation(_Model):
    context_index: int = Field(ge=0)
    relevance: Relevance
    used: bool
    reason: str = ""


class ContextRelevanceAnalysis(_Model):
    evaluations: list[ContextEvaluation]
    missing_context: list[str] = []
    # Number of context chunks the item had; absent = unknown, assumed > 0.
    context_count: int | None = Field(default=None, ge=0)


# --- context_precision ------------------------------------------------------
class PrecisionVerdict(_Model):
    context_index: int = Field(ge=0)
    verdict: YesNo
    reason: str = ""


class ContextPrecisionAnalysis(_Model):
    verdicts: list[PrecisionVerdict]


# --- answer_relevancy -------------------------------------------------------
class StatementVerdict(_Model):
    statement: str = ""
    verdict: YesNoUnsure
    reason: str = ""


class AnswerRelevancyAnalysis(_Model):
    statements: list[str] = []
    verdicts: list[StatementVerdict]


# --- bias / toxicity --------------------------------------------------------
class OpinionVerdict(_Model):
    opinion: str = ""
    verdict: YesNo  # yes = biased
    reason: str = ""


class BiasAnalysis(_Model):
    opinions: list[str] = []
    verdicts: list[OpinionVerdict]


class ToxicityVerdict(_Model):
    verdict: YesNo  # yes = toxic
    reason: str = ""


class ToxicityAnalysis(_Model):
    verdicts: list[ToxicityVerdict]


# --- factuality / custom_rubric ---------------------------------------------
class FactualityAnalysis(_Model):
    category: Category
    reason: str = ""


class CustomRubricAnalysis(_Model):
    score: Ratio
    reason: str = ""


# --- imported ---------------------------------------------------------------
class ImportedAnalysis(_Model):
    """Another tool's grade as it recorded it: pass, score (0-1) and reason."""

    passed: bool
    score: Ratio
    reason: str = ""


# --- non-LLM kinds ----------------------------------------------------------
class TextAnalysis(_Model):
    """What ``analyze_text`` produced: the unscaled ratio plus details."""

    ratio: Ratio


ANALYSIS_MODELS: dict[str, type[BaseModel]] = {
    "faithfulness": FaithfulnessAnalysis,
    "hallucination": HallucinationAnalysis,
    "context_relevance": ContextRelevanceAnalysis,
    "context_precision": ContextPrecisionAnalysis,
    "answer_relevancy": AnswerRelevancyAnalysis,
    "bias": BiasAnalysis,
    "toxicity": ToxicityAnalysis,
    "factuality": FactualityAnalysis,
    "custom_rubric": CustomRubricAnalysis,
    "content_similarity": TextAnalysis,
    "textual_difference": TextAnalysis,
    "keyword_coverage": TextAnalysis,
    "completeness": TextAnalysis,
    "tone_consistency": TextAnalysis,
    "tool_call_accuracy": TextAnalysis,
    "trajectory_accuracy": TextAnalysis,
    **AGENT_ANALYSIS_MODELS,
    "trajectory": TextAnalysis,
    **RAG_ANALYSIS_MODELS,
    "imported": ImportedAnalysis,
}


def format_path(loc: Sequence[int | str]) -> str:
    """Turn a pydantic location into ``verdicts[2].verdict``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _describe(error: ErrorDetails) -> str:
    """A short human sentence for one pydantic error."""
    kind = error["type"]
    message = str(error["msg"])
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        expected = message.removeprefix("Input should be ")
        return f"must be {expected} (got {error['input']!r})"
    message = message.removeprefix("Value error, ")
    message = message.removeprefix("Input should be ").removeprefix("input should be ")
    if not message.startswith("must"):
        message = f"must be {message}"
    return f"{message} (got {error['input']!r})"


def validate_analysis(kind: str, analysis: dict[str, Any]) -> dict[str, Any]:
    """Validate an analysis against the kind's shape and return it normalised.

    Raises ``UnknownKindError`` for an unknown kind and ``AnalysisError`` (with
    ``.path``) for the first problem found.
    """
    try:
        model = ANALYSIS_MODELS[kind]
    except (KeyError, TypeError):
        raise UnknownKindError(kind, tuple(ANALYSIS_MODELS)) from None
    if not isinstance(analysis, dict):
        raise AnalysisError(
            f"{kind} analysis must be a JSON object, got {type(analysis).__name__}",
            path="",
        )
    try:
        validated = model.model_validate(analysis)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        path = format_path(error["loc"])
        raise AnalysisError(
            f"{kind} analysis, {path or 'top level'}: {_describe(error)}", path=path
        ) from None
    return validated.model_dump()


_LONE_LETTER = re.compile(r"^(?:\(([A-E])\)|([A-E])\)?)[.:,]?$", re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object inside ``text`` (a judge may write a sentence before it)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_factuality_reply(text: str) -> dict[str, Any]:
    """Parse a factuality judge reply into ``{"category", "reason"}``.

    Accepted (SCORERS.md): a JSON object with ``category`` (trimmed,
    upper-cased, A-E) and ``reason`` (a Markdown code fence around it is
    tolerated, and so is text before or after it, as promptfoo reads it); otherwise a reply
    whose first non-blank token is a lone letter
    A-E, optionally in parentheses and optionally followed by ``.``, ``:`` or
    ``,`` (``(C) because…``, ``C``, ``c) same``, ``B. more detail``). Anything
    else (``F``, ``{"category": "(A)"}``, prose) raises ``AnalysisError``: a
    parse error, never a silent fail.
    """
    if not isinstance(text, str):
        raise AnalysisError("factuality reply must be text", path="")
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced is not None:
        stripped = fenced.group(1)
    if stripped.startswith("{"):
        try:  # the reply's opening object; the judge's text after it is ignored
            data, _ = json.JSONDecoder().raw_decode(stripped)
        except ValueError:
            raise AnalysisError("factuality reply is not valid JSON", path="") from None
        if not isinstance(data, dict):
            raise AnalysisError("factuality reply must be a JSON object", path="")
        return validate_analysis("factuality", data)
    embedded = _first_json_object(stripped)
    if embedded is not None and "category" in embedded:
        return validate_analysis("factuality", embedded)
    parts = stripped.split(maxsplit=1)
    match = _LONE_LETTER.match(parts[0]) if parts else None
    if match is None:
        raise AnalysisError(
            "factuality reply has neither a JSON object with a category nor a "
            f"leading lone letter A-E (starts with {stripped[:40]!r})",
            path="category",
        )
    letter = match.group(1) or match.group(2)
    reason = parts[1].strip() if len(parts) > 1 else ""
    return {"category": letter.upper(), "reason": reason}
