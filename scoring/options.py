"""Scorer options: one pydantic model per kind, extra keys forbidden.

``validate_options`` merges the user's options with the kind's defaults (nested
``penalties`` / ``category_scores`` key by key, an explicit 0 honoured) and
returns the full dict; ``options_schema`` exports the JSON Schema the web app
builds its forms from.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from scoring.analysis import format_path
from scoring.errors import OptionsError, UnknownKindError

__all__ = [
    "DEFAULT_CUSTOM_RUBRIC",
    "MAX_SCALE",
    "OPTIONS_MODELS",
    "check_kind",
    "default_options",
    "options_schema",
    "validate_options",
]


# Every number option has a finite range. Scores are stored, summed and binned as
# floats, so an option like a scale of 1e308 would overflow them (a stored 1e308 made
# every later rescore fail); no real scorer comes near these bounds.
MAX_SCALE = 1_000_000.0


def _number(value: Any) -> Any:
    """Refuse booleans and anything that is not a finite number, whatever its type:
    JSON gives NaN and 1e999 (inf) as floats, 10**400 as an int, "nan" as a string."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    if isinstance(value, (int, float, str)):
        try:
            number = float(value)
        except OverflowError:
            raise ValueError("must be a finite number") from None
        except ValueError:
            return value  # not a number at all: pydantic's own message says so
        if not math.isfinite(number):
            raise ValueError("must be a finite number")
    return value


Number = Annotated[float, Field(allow_inf_nan=False), BeforeValidator(_number)]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class CommonOptions(_Options):
    scale: Number = Field(
        default=1.0,
        gt=0,
        le=MAX_SCALE,
        title="Scale",
        description="Scores run from 0 to this number (score = ratio x scale).",
    )
    threshold: Number = Field(
        default=0.5,
        ge=0,
        le=1,
        title="Pass threshold",
        description=(
            "Fraction of the scale. Higher-is-better kinds pass when score >= "
            "threshold x scale; lower-is-better kinds when score <= threshold x scale."
        ),
    )


class ContextRelevancePenalties(_Options):
    unused_high_relevance: Number = Field(
        default=0.10,
        ge=0,
        le=1,
        title="Unused high-relevance chunk",
        description="Subtracted for every highly relevant chunk the answer did not use (no cap).",
    )
    missing_context_per_item: Number = Field(
        default=0.15,
        ge=0,
        le=1,
        title="Per missing piece of context",
        description="Subtracted for every piece of information the judge says was missing.",
    )
    max_missing_context_penalty: Number = Field(
        default=0.50,
        ge=0,
        le=1,
        title="Cap on the missing-context penalty",
        description="The missing-context penalty never exceeds this.",
    )


class ContextRelevanceOptions(CommonOptions):
    penalties: ContextRelevancePenalties = Field(
        default_factory=ContextRelevancePenalties,
        title="Penalties",
        description="Each penalty is a fraction of the unscaled score; an explicit 0 turns it off.",
    )


class AnswerRelevancyOptions(CommonOptions):
    uncertainty_weight: Number = Field(
        default=0.3,
        ge=0,
        le=1,
        title="Weight of 'unsure' statements",
        description="An 'unsure' statement counts as this fraction of a relevant one.",
    )


# Factuality's category scores are fractions of the scale, 0 to 1, so that the score
# stays within 0-scale like every other score a result holds (scoring/ranges.py):
# overrides, the aggregates and the histogram assume it. promptfoo takes any number
# (README, row factuality-category-score-range).
CategoryScore = Annotated[
    float,
    Field(allow_inf_nan=False, ge=0, le=1),
    BeforeValidator(_number),
]


class CategoryScores(_Options):
    subset: CategoryScore = Field(default=1.0, title="A: subset, consistent")
    superset: CategoryScore = Field(default=1.0, title="B: superset, consistent")
    agree: CategoryScore = Field(default=1.0, title="C: same details")
    disagree: CategoryScore = Field(default=0.0, title="D: disagrees")
    differ_but_factual: CategoryScore = Field(
        default=1.0, title="E: differs, factually equivalent"
    )


def _rubric_with(placeholder: str) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("must not be empty")
            if placeholder not in value:
                raise ValueError(f"must contain the placeholder {placeholder}")
        return value

    return BeforeValidator(check)


class FactualityOptions(CommonOptions):
    threshold: (
        Annotated[
            float, Field(allow_inf_nan=False, ge=0, le=1), BeforeValidator(_number)
        ]
        | None
    ) = Field(  # type: ignore[assignment]
        default=None,
        title="Pass threshold",
        description=(
            "Empty: pass iff the category's score is > 0 (promptfoo's rule). "
            "A number replaces that with score >= threshold x scale."
        ),
    )
    category_scores: CategoryScores = Field(
        default_factory=CategoryScores,
        title="Category scores",
        description=(
            "Score of each answer category A-E, as a fraction of the scale, from 0 "
            "to 1 (promptfoo takes any number; a score must stay within 0-scale)."
        ),
    )
    rubric_prompt: Annotated[str | None, _rubric_with("{{completion}}")] = Field(
        default=None,
        title="Custom rubric prompt",
        description=(
            "Replaces the built-in prompt. Placeholders: {{input}}, {{ideal}} (the "
            "reference) and {{completion}} (the output). The judge may answer with "
            'JSON {"category", "reason"} or a leading letter A-E.'
        ),
    )


DEFAULT_CUSTOM_RUBRIC = (
    "Rate how well the output answers the input: is it correct, complete and "
    "helpful, and consistent with the context and the reference when they are "
    "given? 1 means fully, 0 means not at all.\n\n"
    "Input: {{input}}\nContext: {{context}}\nReference: {{reference}}\nOutput: {{output}}"
)


class CustomRubricOptions(CommonOptions):
    rubric_prompt: Annotated[str, _rubric_with("{{output}}")] = Field(
        default=DEFAULT_CUSTOM_RUBRIC,
        title="Rubric prompt",
        description=(
            "What the judge scores, from 0 to 1. Placeholders: {{input}}, {{output}} "
            "(required), {{context}}, {{reference}}."
        ),
    )


class ContentSimilarityOptions(CommonOptions):
    ignore_case: bool = Field(
        default=True,
        title="Ignore case",
        description="Lower-case both texts before comparing.",
        strict=True,
    )


class ToneConsistencyOptions(CommonOptions):
    reference_tone: str | None = Field(
        default=None,
        title="Reference tone",
        description=(
            "A text with the wanted tone. Empty: score how steady the sentiment "
            "is across the output's sentences instead."
        ),
    )


def _optional_name(value: Any) -> Any:
    """A blank tool name (an empty form field) is no name."""
    if isinstance(value, str):
        return value.strip() or None
    return value


def _name_list(value: Any) -> Any:
    """Tool names as a list, or as one comma-separated text (a form field); blank: none."""
    if isinstance(value, str):
        names = [name.strip() for name in value.split(",")]
        return [name for name in names if name] or None
    if isinstance(value, list) and not value:
        return None
    return value


ToolName = Annotated[str, Field(min_length=1, max_length=200)]


class ToolCallAccuracyOptions(CommonOptions):
    expected_tool: Annotated[ToolName | None, BeforeValidator(_optional_name)] = Field(
        default=None,
        title="Expected tool",
        description=(
            "The tool the agent should call. Leave empty to use the expected tool "
            "order, or else the item's expected tool calls."
        ),
    )
    expected_tool_order: Annotated[
        list[ToolName] | None, BeforeValidator(_name_list)
    ] = Field(
        default=None,
        title="Expected tool order",
        description=(
            "Tools the agent should call in this order (comma-separated). It wins "
            "over the expected tool."
        ),
    )
    strict_mode: bool = Field(
        default=False,
        title="Strict",
        description=(
            "Expected tool: it must be the only call. Expected order: the calls must "
            "be exactly that list."
        ),
        strict=True,
    )


class TrajectoryAccuracyOptions(CommonOptions):
    expected_tool_order: Annotated[
        list[ToolName] | None, BeforeValidator(_name_list)
    ] = Field(
        default=None,
        title="Expected tools",
        description=(
            "The tools the agent should call (comma-separated), compared by name. "
            "Leave empty to use the item's expected tool calls, whose arguments and "
            "results must match too when they are given."
        ),
    )
    ordering: Literal["relaxed", "strict", "unordered"] = Field(
        default="relaxed",
        title="Ordering",
        description=(
            "relaxed: in this order, other calls between allowed; strict: position "
            "by position, extra calls cost; unordered: all present, any order."
        ),
    )
    allow_repeated_steps: bool = Field(
        default=True,
        title="Allow repeated calls",
        description="If off, 0.1 is taken off for every tool called more than once.",
        strict=True,
    )


# ----------------------------------------------------------------- agent kinds (issue 18)

_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def _criteria(value: Any) -> Any:
    """A rubric as a text (one required criterion per non-blank line, list markers such
    as "-", "*", "1." stripped, as Mastra reads one), a list of texts (all required) or a
    list of ``{"description", "required"}``."""
    if isinstance(value, str):
        lines = (_LIST_MARKER.sub("", line).strip() for line in value.split("\n"))
        return [{"description": line, "required": True} for line in lines if line]
    if isinstance(value, list):
        return [
            {"description": item, "required": True} if isinstance(item, str) else item
            for item in value
        ]
    return value


def _not_blank(value: Any) -> Any:
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()
    return value


Criterion = Annotated[
    str, BeforeValidator(_not_blank), Field(min_length=1, max_length=2000)
]


class RubricCriterion(_Options):
    description: Criterion = Field(title="Criterion")
    required: bool = Field(
        default=True,
        title="Required",
        description="Optional criteria count only when the rubric has no required one.",
        strict=True,
    )


DEFAULT_RUBRIC_CRITERIA: list[dict[str, Any]] = [
    {"description": "The output answers the task it was given.", "required": True},
    {
        "description": "The output is correct and does not invent facts.",
        "required": True,
    },
]


class RubricOptions(CommonOptions):
    criteria: Annotated[
        list[RubricCriterion],
        BeforeValidator(_criteria),
        Field(min_length=1, max_length=50),
    ] = Field(
        default_factory=lambda: [
            RubricCriterion.model_validate(c) for c in DEFAULT_RUBRIC_CRITERIA
        ],
        title="Criteria",
        description=(
            "The rubric: one criterion per line (all required), or a list of "
            '{"description", "required"}. The score is the scale when every required '
            "criterion is met (every criterion when none is required), else 0."
        ),
    )


DEFAULT_MULTI_TURN_CRITERION = (
    "The assistant answered every request the user made in the conversation, "
    "correctly and helpfully."
)


class MultiTurnJudgeOptions(CommonOptions):
    criterion: Criterion = Field(
        default=DEFAULT_MULTI_TURN_CRITERION,
        title="Criterion",
        description=(
            "What the whole conversation must achieve, in plain words. The score is "
            "the scale when the judge finds it satisfied, else 0."
        ),
    )


def _tool_list(value: Any) -> Any:
    """Tools as a list of {"name", "description"}, or a text with one "name: description"
    per line (a form field); blank: none."""
    if isinstance(value, str):
        tools = []
        for line in value.split("\n"):
            name, _, description = line.partition(":")
            if name.strip():
                tools.append({"name": name.strip(), "description": description.strip()})
        return tools
    return value


class AvailableTool(_Options):
    name: ToolName = Field(title="Tool name")
    description: str = Field(default="", max_length=2000, title="What it does")


class ToolCallAccuracyLLMOptions(CommonOptions):
    available_tools: Annotated[
        list[AvailableTool], BeforeValidator(_tool_list), Field(max_length=200)
    ] = Field(
        default_factory=list,
        title="Available tools",
        description=(
            "The tools the agent could call, one 'name: description' per line; the "
            "judge reads them to decide which calls were appropriate or missing."
        ),
    )


class TrajectoryAccuracyLLMOptions(CommonOptions):
    expected_tool_order: Annotated[
        list[ToolName] | None, BeforeValidator(_name_list)
    ] = Field(
        default=None,
        title="Expected tools",
        description=(
            "The tools the agent should call, in order (comma-separated). Leave empty "
            "to use the item's expected trajectory (or expected tool calls), or to let "
            "the judge assess the trajectory from the task alone."
        ),
    )


def _sequences(value: Any) -> Any:
    """Forbidden sequences as lists of names, or a text with one comma-separated
    sequence per line; blank: none."""
    if isinstance(value, str):
        rows = [
            [n.strip() for n in line.split(",") if n.strip()]
            for line in value.split("\n")
        ]
        return [row for row in rows if row]
    return value


def _names_or_empty(value: Any) -> Any:
    names = _name_list(value)
    return [] if names is None else names


class TrajectoryWeights(_Options):
    accuracy: Number = Field(default=0.4, ge=0, le=100, title="Accuracy")
    efficiency: Number = Field(default=0.3, ge=0, le=100, title="Efficiency")
    tool_failures: Number = Field(default=0.2, ge=0, le=100, title="Tool failures")
    blacklist: Number = Field(default=0.1, ge=0, le=100, title="Blacklist")


class TrajectoryOptions(TrajectoryAccuracyOptions):
    max_steps: int | None = Field(
        default=None,
        ge=0,
        le=100_000,
        title="Step budget",
        description="Most tool calls allowed; each call over it costs max_steps-th of the efficiency.",
    )
    no_redundant_calls: bool | None = Field(
        default=None,
        title="Penalise redundant calls",
        description=(
            "A call repeating the previous one (same tool, same arguments) costs 0.2 of "
            "the efficiency. Empty: checked only when a step budget is set."
        ),
        strict=True,
    )
    blacklisted_tools: Annotated[
        list[ToolName], BeforeValidator(_names_or_empty), Field(max_length=200)
    ] = Field(
        default_factory=list,
        title="Forbidden tools",
        description="Calling any of these (comma-separated) makes the score 0.",
    )
    blacklisted_sequences: Annotated[
        list[Annotated[list[ToolName], Field(min_length=1, max_length=50)]],
        BeforeValidator(_sequences),
        Field(max_length=100),
    ] = Field(
        default_factory=list,
        title="Forbidden sequences",
        description=(
            "One comma-separated sequence per line; calling one back to back makes "
            "the score 0."
        ),
    )
    max_retries_per_tool: int = Field(
        default=2,
        ge=0,
        le=1000,
        title="Retries allowed per tool",
        description=(
            'Retries after a failed call ("success": false) beyond this cost 0.2 of the '
            "tool-failure dimension each."
        ),
    )
    weights: TrajectoryWeights = Field(
        default_factory=TrajectoryWeights,
        title="Weights",
        description="Weight of each dimension that applies; they are normalised to sum to 1.",
    )


# ------------------------------------------- scoring.kinds_rag (issue 18): Mastra 1.10.2


class AnswerSimilarityOptions(CommonOptions):
    exact_match_bonus: Number = Field(
        default=0.2,
        ge=0,
        le=1,
        title="Bonus for an exact match",
        description="An exact match counts 1 + this; the maximum is N x (1 + this).",
    )
    semantic_weight: Number = Field(
        default=0.8,
        ge=0,
        le=1,
        title="Weight of a same-meaning match",
        description="A semantic match counts this much; a partial one half of it.",
    )
    missing_penalty: Number = Field(
        default=0.15,
        ge=0,
        le=1,
        title="Per missing unit",
        description="Subtracted (before dividing) for every reference unit the output misses.",
    )
    contradiction_penalty: Number = Field(
        default=1.0,
        ge=0,
        le=1,
        title="Per contradiction",
        description="Subtracted from the ratio for every contradiction (1: any contradiction scores 0).",
    )
    extra_info_penalty: Number = Field(
        default=0.05,
        ge=0,
        le=1,
        title="Per extra unit",
        description="Subtracted for every output unit the reference does not have (at most 0.2 in all).",
    )


class NoiseImpactWeights(_Options):
    none: Number = Field(default=1.0, ge=0, le=1, title="none")
    minimal: Number = Field(default=0.85, ge=0, le=1, title="minimal")
    moderate: Number = Field(default=0.6, ge=0, le=1, title="moderate")
    significant: Number = Field(default=0.3, ge=0, le=1, title="significant")
    severe: Number = Field(default=0.1, ge=0, le=1, title="severe")


class NoisePenalties(_Options):
    major_issue_per_item: Number = Field(
        default=0.1,
        ge=0,
        le=1,
        title="Per major issue",
        description="Subtracted for every major issue the judge lists.",
    )
    max_major_issue_penalty: Number = Field(
        default=0.3,
        ge=0,
        le=1,
        title="Cap on the major-issue penalty",
    )


class NoiseSensitivityOptions(CommonOptions):
    impact_weights: NoiseImpactWeights = Field(
        default_factory=NoiseImpactWeights,
        title="Impact weights",
        description="What each dimension's impact level is worth; their mean checks the judge's robustness score.",
    )
    discrepancy_threshold: Number = Field(
        default=0.2,
        ge=0,
        le=1,
        title="Discrepancy threshold",
        description=(
            "When the judge's robustness score and the mean of the impact weights differ "
            "by more than this, the lower of the two is taken."
        ),
    )
    penalties: NoisePenalties = Field(default_factory=NoisePenalties, title="Penalties")
    noise_type: Annotated[str | None, BeforeValidator(_optional_name)] = Field(
        default=None,
        max_length=500,
        title="Kind of noise",
        description="Optional: what noise was added to the input (shown to the judge).",
    )


class PromptAlignmentOptions(CommonOptions):
    evaluation_mode: Literal["user", "system", "both"] = Field(
        default="both",
        title="Align with",
        description=(
            "user: the item's input; system: the item's system prompt; both: the two "
            "(needs at least one of them)."
        ),
    )


def _whole_number(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be a whole number, not a boolean")
    return value


class SummarizationOptions(CommonOptions):
    max_questions: Annotated[int, BeforeValidator(_whole_number)] = Field(
        default=10,
        ge=1,
        le=50,
        title="Coverage questions",
        description="At most this many questions about the source check the summary's coverage.",
    )


OPTIONS_MODELS: dict[str, type[CommonOptions]] = {
    "faithfulness": CommonOptions,
    "hallucination": CommonOptions,
    "context_relevance": ContextRelevanceOptions,
    "context_precision": CommonOptions,
    "answer_relevancy": AnswerRelevancyOptions,
    "bias": CommonOptions,
    "toxicity": CommonOptions,
    "factuality": FactualityOptions,
    "custom_rubric": CustomRubricOptions,
    "content_similarity": ContentSimilarityOptions,
    "textual_difference": CommonOptions,
    "keyword_coverage": CommonOptions,
    "completeness": CommonOptions,
    "tone_consistency": ToneConsistencyOptions,
    "tool_call_accuracy": ToolCallAccuracyOptions,
    "trajectory_accuracy": TrajectoryAccuracyOptions,
    "rubric": RubricOptions,
    "multi_turn_judge": MultiTurnJudgeOptions,
    "tool_call_accuracy_llm": ToolCallAccuracyLLMOptions,
    "trajectory_accuracy_llm": TrajectoryAccuracyLLMOptions,
    "trajectory": TrajectoryOptions,
    "answer_similarity": AnswerSimilarityOptions,
    "context_recall": CommonOptions,
    "noise_sensitivity": NoiseSensitivityOptions,
    "prompt_alignment": PromptAlignmentOptions,
    "summarization": SummarizationOptions,
    # Another tool's grades (evalsite's import): the tool decided pass; the threshold
    # is not used (scoring.formulas.passes).
    "imported": CommonOptions,
}


def check_kind(kind: object) -> str:
    """Return ``kind`` if it is known, else raise ``UnknownKindError``."""
    if not isinstance(kind, str) or kind not in OPTIONS_MODELS:
        raise UnknownKindError(kind, tuple(OPTIONS_MODELS))
    return kind


def _message(kind: str, model: type[BaseModel], error: ErrorDetails) -> tuple[str, str]:
    loc = tuple(error["loc"])
    field = format_path(loc)
    if error["type"] == "extra_forbidden":
        parent: type[BaseModel] | None = model
        for part in loc[:-1]:
            annotation = parent.model_fields[str(part)].annotation if parent else None
            parent = (
                annotation
                if isinstance(annotation, type) and issubclass(annotation, BaseModel)
                else None
            )
        allowed = ", ".join(parent.model_fields) if parent else ""
        return field, f"unknown option {field!r} for {kind}; allowed here: {allowed}"
    message = str(error["msg"]).removeprefix("Value error, ")
    message = message.removeprefix("Input should be ")
    if not message.startswith("must"):
        message = f"must be {message}"
    if error["type"] == "missing":
        message = "is required"
    got = repr(error.get("input"))
    if len(got) > 60:
        got = got[:57] + "..."
    return field, f"option {field!r} of {kind} {message} (got {got})"


def validate_options(
    kind: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Validate ``options`` for ``kind``, merge them with the defaults and return the full dict.

    Raises ``UnknownKindError`` or ``OptionsError`` (``.field`` = dotted option name).
    """
    model = OPTIONS_MODELS[check_kind(kind)]
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise OptionsError(f"options of {kind} must be a JSON object", field="")
    try:
        return model.model_validate(options).model_dump()
    except ValidationError as exc:
        field, message = _message(kind, model, exc.errors(include_url=False)[0])
        raise OptionsError(message, field=field) from None


def default_options(kind: str) -> dict[str, Any]:
    """The kind's full default options."""
    return validate_options(kind, None)


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            merged = {**_inline_refs(copy.deepcopy(defs[name]), defs)}
            merged.update(
                {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
            )
            return merged
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    return node


def options_schema(kind: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the kind's options, nested objects inlined."""
    schema = OPTIONS_MODELS[check_kind(kind)].model_json_schema()
    defs = schema.get("$defs", {})
    inlined: dict[str, Any] = _inline_refs(schema, defs)
    inlined["title"] = f"{kind} options"
    return inlined
