"""Context relevance: how relevant the retrieved chunks are to the question and how well
the answer uses them.

Steps: rate every chunk (relevance, used) and list missing information -> reason. An
item without chunks is scored without a call (full scale).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from scoring.client import Plan
from scoring.kinds.base import (
    AnalysisModel,
    CommonOptions,
    KindDef,
    Number,
    OptionsModel,
    Relevance,
    StepRun,
    check_indexes,
    round_half_up,
)
from scoring.prompts import (
    Flag,
    Messages,
    ReasonReply,
    Reply,
    Step,
    block,
    context_blocks,
    context_field,
    input_block,
    kind_messages,
    text_field,
)
from scoring.prompts import Relevance as ReplyRelevance

NAME = "context_relevance"

ROLE = "You are a retrieval-quality judge rating how relevant retrieved context chunks are to a query and its response."
MEANING = "how relevant the context chunks are to the query, minus penalties for highly relevant chunks the response did not use and for missing context (higher is better)."
REASON_ITEMS = "context chunks (as chunk N, the index plus one) and missing information"
EVALUATIONS_ANSWER = '{"evaluations": [{"context_index": <int>, "relevance": "high" | "medium" | "low" | "none", "used": true | false, "reason": "<one sentence>"}, ...], "missing_context": ["<missing information>", ...]}'

CONTEXT_RELEVANCE = """\
Rate every <context> chunk for the query in <input> and the response in <output>.
relevance (how useful the chunk is for answering the query):
- "high": directly answers the query or is essential to the answer.
- "medium": related and gives useful supporting information.
- "low": only tangentially related.
- "none": unrelated to the query.
used: true when the response uses information from the chunk (a paraphrase counts), \
false otherwise.
missing_context: short descriptions of information the query needs that no chunk \
provides; an empty list when nothing is missing.
Return exactly one evaluation per chunk, with its context_index, in index order. The \
reason is one sentence; name chunks as "chunk N", where N is the index plus one."""


class ChunkEvaluation(Reply):
    context_index: int = Field(ge=0)
    relevance: ReplyRelevance
    used: Flag
    reason: str


class ContextRelevanceReply(Reply):
    evaluations: list[ChunkEvaluation]
    missing_context: list[str]


def first_messages(case: Mapping[str, Any], options: Mapping[str, Any]) -> Messages:
    output = block("output", text_field(case, "output"))
    user = (
        f"{input_block(case)}\n\n{output}\n\n{context_blocks(context_field(case))}\n\n"
        "Rate every context chunk."
    )
    return kind_messages(
        NAME, "evaluations", ROLE, CONTEXT_RELEVANCE, EVALUATIONS_ANSWER, user
    )


def analyse(
    run: StepRun, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """Every chunk rated; without chunks, no call and nothing to rate."""
    context = list(case.get("context") or [])
    if not context:
        return {"evaluations": [], "missing_context": [], "context_count": 0}
    reply = yield from run.step("evaluations", first_messages(case, options))
    assert isinstance(reply, ContextRelevanceReply)
    check_indexes(run, [e.context_index for e in reply.evaluations], len(context))
    return {
        "evaluations": [e.model_dump() for e in reply.evaluations],
        "missing_context": list(reply.missing_context),
        "context_count": len(context),
    }


class ContextEvaluation(AnalysisModel):
    context_index: int = Field(ge=0)
    relevance: Relevance
    used: bool
    reason: str = ""


class ContextRelevanceAnalysis(AnalysisModel):
    evaluations: list[ContextEvaluation]
    missing_context: list[str] = []
    # Number of context chunks the item had; absent = unknown, assumed > 0.
    context_count: int | None = Field(default=None, ge=0)


class ContextRelevancePenalties(OptionsModel):
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


RELEVANCE_WEIGHTS: dict[str, float] = {
    "high": 1.0,
    "medium": 0.7,
    "low": 0.3,
    "none": 0.0,
}


def score(analysis: dict[str, Any], options: dict[str, Any]) -> float:
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


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Context relevance",
        "description": (
            "How relevant the retrieved context chunks are to the question and how "
            "well the answer uses them: weighted relevance (high 1, medium 0.7, low "
            "0.3, none 0) minus penalties for unused highly relevant chunks and for "
            "information the judge found missing."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output"),
        "direction": "higher",
        "steps": ("evaluations", "reason"),
        "overridable": {
            "evaluations.*.relevance": ["high", "medium", "low", "none"],
            "evaluations.*.used": [True, False],
        },
        "value_labels": {
            "evaluations.*.relevance": {
                "high": "high",
                "medium": "medium",
                "low": "low",
                "none": "irrelevant",
            },
            "evaluations.*.used": {"true": "used", "false": "not used"},
        },
    },
    options=ContextRelevanceOptions,
    analysis=ContextRelevanceAnalysis,
    score=score,
    steps=(
        Step(NAME, "evaluations", ContextRelevanceReply),
        Step(NAME, "reason", ReasonReply),
    ),
    role=ROLE,
    meaning=MEANING,
    reason_items=REASON_ITEMS,
    first_messages=first_messages,
    analyse=analyse,
)
