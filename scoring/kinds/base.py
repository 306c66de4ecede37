"""What every kind module builds on: the analysis and options base models and value
types, the SCORERS.md rounding, and ``KindDef``, the description of one kind that
``scoring.registry`` assembles the registry and the shared tables from.

Only pydantic and the leaf modules of ``scoring`` are imported here, so that the
kind modules can be imported by ``scoring.registry`` without a cycle.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from scoring.client import Plan, StepRecord
from scoring.errors import JudgeError
from scoring.jstext import js_lower, js_strip
from scoring.prompts import Messages, Reply, Step

__all__ = [
    "MAX_SCALE",
    "Analyse",
    "AnalysisModel",
    "Category",
    "CommonOptions",
    "KindDef",
    "Number",
    "TextAnalysis",
    "OptionsModel",
    "Ratio",
    "StepRun",
    "Relevance",
    "YesNo",
    "YesNoUnsure",
    "check_indexes",
    "extract_then_judge",
    "step_error",
    "check_number",
    "format_path",
    "optional_name",
    "options_json_schema",
    "round_half_up",
    "rubric_with",
    "score_text_ratio",
    "share_of_yes",
]

# --------------------------------------------------------------------------- analyses


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


class AnalysisModel(BaseModel):
    # Extra keys are kept (e.g. "context_count", or details a judge adds) so
    # that a validated analysis loses nothing.
    model_config = ConfigDict(extra="allow")


class TextAnalysis(AnalysisModel):
    """What ``analyze_text`` produced: the unscaled ratio plus details."""

    ratio: Ratio


def format_path(loc: Sequence[int | str]) -> str:
    """Turn a pydantic location into ``verdicts[2].verdict``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


# --------------------------------------------------------------------------- options

# Every number option has a finite range. Scores are stored, summed and binned as
# floats, so an option like a scale of 1e308 would overflow them (a stored 1e308 made
# every later rescore fail); no real scorer comes near these bounds.
MAX_SCALE = 1_000_000.0


def check_number(value: Any) -> Any:
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


Number = Annotated[float, Field(allow_inf_nan=False), BeforeValidator(check_number)]


def optional_name(value: Any) -> Any:
    """A blank name (an empty form field) is no name."""
    if isinstance(value, str):
        return value.strip() or None
    return value


def rubric_with(placeholder: str) -> Any:
    """Validator of a rubric prompt: not blank, and naming ``placeholder``."""

    def check(value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("must not be empty")
            if placeholder not in value:
                raise ValueError(f"must contain the placeholder {placeholder}")
        return value

    return BeforeValidator(check)


class OptionsModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class CommonOptions(OptionsModel):
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


def options_json_schema(kind: str, model: type[BaseModel]) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a kind's options model, nested objects inlined."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    inlined: dict[str, Any] = _inline_refs(schema, defs)
    inlined["title"] = f"{kind} options"
    return inlined


# --------------------------------------------------------------------------- formulas

_EPSILON = 2.220446049250313e-16


def round_half_up(x: float) -> float:
    """Round half up to 2 decimals: ``floor((x + 2.220446049250313e-16) * 100 + 0.5) / 100``.

    0.625 -> 0.63 and 0.125 -> 0.13 (Python's ``round`` gives 0.62 / 0.12).
    """
    return math.floor((x + _EPSILON) * 100 + 0.5) / 100


def share_of_yes(verdicts: list[dict[str, Any]], scale: float) -> float:
    """round2(yes / N x scale); no verdicts -> 0."""
    if not verdicts:
        return 0.0
    yes = sum(1 for v in verdicts if v["verdict"] == "yes")
    return round_half_up(yes / len(verdicts) * scale)


def score_text_ratio(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """Non-LLM kinds: the ratio ``analyze_text`` computed, scaled, not rounded."""
    return float(analysis["ratio"] * options["scale"])


# --------------------------------------------------------------------------- judge steps


class StepRun(Protocol):
    """What ``scoring.judge`` gives a kind's ``analyse``: runs one named step of the kind
    (a plan, see ``scoring.client``) and keeps the records of the steps run so far."""

    kind: str
    steps: list[StepRecord]

    def step(self, name: str, messages: Messages) -> Plan[Reply]: ...


def step_error(run: StepRun, message: str) -> JudgeError:
    """A judge error for the reply of the last step run, which ``message`` says is wrong."""
    record = run.steps[-1]
    record.error = message
    return JudgeError(f"{run.kind}: {message}", raw=record.raw, steps=run.steps)


def check_indexes(run: StepRun, indexes: list[int], count: int) -> None:
    """Every context_index of the last reply names one of the item's ``count`` chunks."""
    bad = [i for i in indexes if i >= count]
    if bad:
        raise step_error(
            run, f"context_index {bad[0]} is out of range (the item has {count} chunks)"
        )


# --------------------------------------------------------------------------- kinds

ScoreFunction = Callable[[dict[str, Any], dict[str, Any]], float]
FirstMessages = Callable[[Mapping[str, Any], Mapping[str, Any]], Messages]
VerdictMessages = Callable[[Mapping[str, Any], Sequence[str]], Messages]
Analyse = Callable[
    [StepRun, Mapping[str, Any], Mapping[str, Any]], Plan[dict[str, Any]]
]


def extract_then_judge(
    run: StepRun,
    case: Mapping[str, Any],
    options: Mapping[str, Any],
    first: str,
    first_messages: FirstMessages,
    verdict_messages: VerdictMessages,
) -> Plan[dict[str, Any]]:
    """The analysis of the extract-then-judge kinds: the ``first`` step extracts items
    (claims, statements, opinions), the verdicts step judges each one. Nothing
    extracted: no verdict call, no verdicts."""
    reply = yield from run.step(first, first_messages(case, options))
    items = [s for s in reply.model_dump()[first] if s.strip()]
    verdicts: list[dict[str, Any]] = []
    if items:
        verdict_reply = yield from run.step("verdicts", verdict_messages(case, items))
        verdicts = list(verdict_reply.model_dump()["verdicts"])
    return {first: items, "verdicts": verdicts}


@dataclass(frozen=True)
class KindDef:
    """One scorer kind as its module defines it.

    ``entry`` holds the registry fields of ``scoring.registry.KindSpec`` that are not
    derived (label, description, needs_judge, required_fields, direction, steps,
    overridable, value_labels, and runnable when False). Judged kinds also give their
    judge steps, the wording of their reason prompt (role, meaning, reason_items) and
    the builder of their first step's messages (and of the verdict step's, for the
    extract-then-judge kinds), and ``analyse``, which runs the steps before the reason
    and returns the analysis.
    """

    name: str
    entry: dict[str, Any]
    options: type[CommonOptions]
    analysis: type[BaseModel]
    score: ScoreFunction
    steps: tuple[Step, ...] = ()
    role: str = ""
    meaning: str = ""
    reason_items: str = ""
    first_messages: FirstMessages | None = None
    verdict_messages: VerdictMessages | None = None
    analyse: Analyse | None = None
