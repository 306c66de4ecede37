"""The registry of scorer kinds: what each one means, needs and lets reviewers change.

Every kind is defined in its family's module under ``scoring.kinds`` (prompts, reply and
analysis models, options, formula, registry entry). This module lists them, in the
order the web app shows them, and assembles from them the registry (``KINDS``) and the
tables the shared code looks kinds up in: options and analysis models, score functions
here, and the judge steps, reason-prompt wording and message builders in
``scoring.prompts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from scoring import prompts
from scoring.judge_options import drop_defaults, with_judge_options
from scoring.kinds import (
    agent,
    answer_relevancy,
    bias,
    context_precision,
    context_relevance,
    custom_rubric,
    factuality,
    faithfulness,
    hallucination,
    imported,
    rag,
    textual,
    toolcalls,
    toxicity,
    trajectory,
)
from scoring.kinds.base import (
    Analyse,
    CommonOptions,
    KindDef,
    ScoreFunction,
    options_json_schema,
)

__all__ = [
    "ANALYSERS",
    "ANALYSIS_MODELS",
    "KINDS",
    "KIND_DEFS",
    "LLM_KINDS",
    "OPTIONS_MODELS",
    "SCORE_FUNCTIONS",
    "TEXT_KINDS",
    "KindSpec",
]


@dataclass(frozen=True)
class KindSpec:
    """Everything the web app needs to know about one scorer kind.

    ``overridable`` maps an analysis path pattern (``*`` stands for a list
    index) to the values a reviewer may set there; ``value_labels`` maps the
    same patterns to UI labels for those values (booleans keyed "true"/"false").
    Non-LLM kinds have no overridable fields: reviewers override score or pass.
    """

    name: str
    label: str
    description: str
    needs_judge: bool
    required_fields: tuple[str, ...]
    direction: Literal["higher", "lower"]
    options_schema: dict[str, Any]
    defaults: dict[str, Any]
    steps: tuple[str, ...]
    overridable: dict[str, list[Any]]
    value_labels: dict[str, dict[str, str]]
    # False for kinds a run never computes (imported grades): not offered for scorer
    # configs and not in TEXT_KINDS.
    runnable: bool = True


# The kinds, in the order the web app lists them.
KIND_DEFS: tuple[KindDef, ...] = (
    faithfulness.KIND,
    hallucination.KIND,
    context_relevance.KIND,
    context_precision.KIND,
    answer_relevancy.KIND,
    bias.KIND,
    toxicity.KIND,
    factuality.KIND,
    custom_rubric.KIND,
    textual.CONTENT_SIMILARITY,
    textual.TEXTUAL_DIFFERENCE,
    textual.KEYWORD_COVERAGE,
    textual.COMPLETENESS,
    textual.TONE_CONSISTENCY,
    toolcalls.TOOL_CALL_ACCURACY,
    toolcalls.TRAJECTORY_ACCURACY,
    agent.RUBRIC,
    agent.MULTI_TURN_JUDGE,
    agent.TOOL_CALL_ACCURACY_LLM,
    agent.TRAJECTORY_ACCURACY_LLM,
    trajectory.KIND,
    *rag.KINDS,
    imported.KIND,
)


def _options_model(kind: KindDef) -> type[CommonOptions]:
    # Judged kinds also take the judge options (scoring.judge_options).
    if kind.entry.get("needs_judge"):
        return with_judge_options(kind.options)
    return kind.options


OPTIONS_MODELS: dict[str, type[CommonOptions]] = {
    k.name: _options_model(k) for k in KIND_DEFS
}
ANALYSIS_MODELS: dict[str, type[BaseModel]] = {k.name: k.analysis for k in KIND_DEFS}
SCORE_FUNCTIONS: dict[str, ScoreFunction] = {k.name: k.score for k in KIND_DEFS}
# The judged kinds' steps before the reason (scoring.judge runs them).
ANALYSERS: dict[str, Analyse] = {
    k.name: k.analyse for k in KIND_DEFS if k.analyse is not None
}


def _spec(kind: KindDef) -> KindSpec:
    return KindSpec(
        name=kind.name,
        options_schema=options_json_schema(kind.name, OPTIONS_MODELS[kind.name]),
        defaults=drop_defaults(OPTIONS_MODELS[kind.name]().model_dump()),
        **kind.entry,
    )


KINDS: dict[str, KindSpec] = {kind.name: _spec(kind) for kind in KIND_DEFS}

LLM_KINDS: tuple[str, ...] = tuple(
    name for name, spec in KINDS.items() if spec.needs_judge
)
TEXT_KINDS: tuple[str, ...] = tuple(
    name for name, spec in KINDS.items() if not spec.needs_judge and spec.runnable
)

for _kind in KIND_DEFS:
    if _kind.steps:
        prompts.STEPS[_kind.name] = _kind.steps
        prompts.ROLE[_kind.name] = _kind.role
        prompts.MEANING[_kind.name] = _kind.meaning
        prompts.REASON_ITEMS[_kind.name] = _kind.reason_items
    if _kind.first_messages is not None:
        prompts.FIRST_STEP_BUILDERS[_kind.name] = _kind.first_messages
    if _kind.verdict_messages is not None:
        prompts.VERDICT_BUILDERS[_kind.name] = _kind.verdict_messages
