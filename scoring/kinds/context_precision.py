"""Context precision: whether the useful context chunks come first (mean average
precision in retrieval order), judged against the reference answer when there is one,
else against the output.

Steps: judge every chunk useful or not -> reason.
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
    StepRun,
    YesNo,
    check_indexes,
    round_half_up,
)
from scoring.prompts import (
    Messages,
    ReasonReply,
    Reply,
    Step,
    context_blocks,
    context_field,
    input_block,
    kind_messages,
    neutralise,
    text_field,
)
from scoring.prompts import YesNo as ReplyYesNo

NAME = "context_precision"

ROLE = "You are a retrieval-quality judge deciding which retrieved context chunks were useful for an answer."
MEANING = "the mean average precision of the useful context chunks in retrieval order: useful chunks ranked early score higher (higher is better)."
REASON_ITEMS = "context chunks (as chunk N, the index plus one)"
VERDICTS_ANSWER = '{"verdicts": [{"context_index": <int>, "verdict": "yes" | "no", "reason": "<one sentence>"}, ...]}'

CONTEXT_PRECISION = """\
For every <context> chunk decide whether it was useful for arriving at the target answer \
given in <target> (the reference answer when the item has one, otherwise the response \
that was produced), for the query in <input>.
Verdicts:
- "yes": the chunk contains information that the target answer uses or needs.
- "no": the chunk did not contribute to the target answer.
Return exactly one verdict per chunk, with its context_index, in index order. The reason \
is one sentence; name chunks as "chunk N", where N is the index plus one."""


class ChunkVerdict(Reply):
    context_index: int = Field(ge=0)
    verdict: ReplyYesNo
    reason: str


class ContextPrecisionReply(Reply):
    verdicts: list[ChunkVerdict]


def first_messages(case: Mapping[str, Any], options: Mapping[str, Any]) -> Messages:
    reference = text_field(case, "reference")
    target_kind = (
        "the reference answer" if reference else "the response that was produced"
    )
    target = (
        f"<target>\n{neutralise(reference or text_field(case, 'output'))}\n</target>"
    )
    user = (
        f"{input_block(case)}\n\nThe target answer is {target_kind}:\n{target}\n\n"
        f"{context_blocks(context_field(case))}\n\nJudge every context chunk."
    )
    return kind_messages(
        NAME, "verdicts", ROLE, CONTEXT_PRECISION, VERDICTS_ANSWER, user
    )


def analyse(
    run: StepRun, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """Every chunk judged useful or not."""
    context = list(case.get("context") or [])
    reply = yield from run.step("verdicts", first_messages(case, options))
    assert isinstance(reply, ContextPrecisionReply)
    check_indexes(run, [v.context_index for v in reply.verdicts], len(context))
    return {"verdicts": [v.model_dump() for v in reply.verdicts]}


class PrecisionVerdict(AnalysisModel):
    context_index: int = Field(ge=0)
    verdict: YesNo
    reason: str = ""


class ContextPrecisionAnalysis(AnalysisModel):
    verdicts: list[PrecisionVerdict]


def score(analysis: dict[str, Any], options: dict[str, Any]) -> float:
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


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Context precision",
        "description": (
            "Whether the useful context chunks come first: mean average precision "
            "over the chunks in retrieval order, judged against the reference answer "
            "when the item has one, else against the output."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output", "context"),
        "direction": "higher",
        "steps": ("verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": ["yes", "no"]},
        "value_labels": {"verdicts.*.verdict": {"yes": "useful", "no": "not useful"}},
    },
    options=CommonOptions,
    analysis=ContextPrecisionAnalysis,
    score=score,
    steps=(
        Step(NAME, "verdicts", ContextPrecisionReply),
        Step(NAME, "reason", ReasonReply),
    ),
    role=ROLE,
    meaning=MEANING,
    reason_items=REASON_ITEMS,
    first_messages=first_messages,
    analyse=analyse,
)
