"""Answer relevancy: the share of the output's statements that address the question,
statements the judge is unsure about counting with the uncertainty weight.

Steps: split the output into statements -> judge each against the question -> reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from scoring.client import Plan
from scoring.kinds.base import (
    AnalysisModel,
    CommonOptions,
    KindDef,
    Number,
    StepRun,
    YesNoUnsure,
    extract_then_judge,
    round_half_up,
)
from scoring.prompts import (
    Messages,
    ReasonReply,
    Reply,
    Step,
    block,
    indexed_blocks,
    input_block,
    kind_messages,
    text_field,
)
from scoring.prompts import YesNoUnsure as ReplyYesNoUnsure

NAME = "answer_relevancy"

ROLE = "You are a judge evaluating whether a response stays relevant to the question it answers."
MEANING = "the share of the output's statements that are relevant to the question, unsure ones counting partly (higher is better)."
REASON_ITEMS = "statements"
STATEMENTS_ANSWER = '{"statements": ["<statement>", ...]}'
VERDICTS_ANSWER = '{"verdicts": [{"statement": "<statement text>", "verdict": "yes" | "unsure" | "no", "reason": "<one sentence>"}, ...]}'

STATEMENT_EXTRACTION = """\
Split the text in <output> into statements: each statement is one self-contained \
sentence or clause that makes one point. Keep every statement, including off-topic ones, \
in the order they appear; do not merge, judge or rewrite their meaning. If the output is \
empty of content, return an empty list."""

ANSWER_RELEVANCY_VERDICTS = """\
Decide for each numbered <statement> whether it is relevant to the question in <input>.
Verdicts:
- "yes": the statement helps answer the question.
- "unsure": partly relevant or ambiguous: related supporting detail, hedging, or context \
that does not itself answer the question.
- "no": irrelevant to the question.
Return exactly one verdict per statement, in order, copying the statement text. The \
reason is one sentence."""


class StatementsReply(Reply):
    statements: list[str]


class StatementVerdict(Reply):
    statement: str
    verdict: ReplyYesNoUnsure
    reason: str


class AnswerRelevancyVerdictsReply(Reply):
    verdicts: list[StatementVerdict]


def first_messages(case: Mapping[str, Any], options: Mapping[str, Any]) -> Messages:
    output = block("output", text_field(case, "output"))
    return kind_messages(
        NAME,
        "statements",
        ROLE,
        STATEMENT_EXTRACTION,
        STATEMENTS_ANSWER,
        f"{output}\n\nSplit <output> into statements.",
    )


def verdict_messages(case: Mapping[str, Any], items: Sequence[str]) -> Messages:
    user = (
        f"{input_block(case)}\n\n{indexed_blocks('statement', items)}\n\n"
        "Judge every statement against the question in <input>."
    )
    return kind_messages(
        NAME, "verdicts", ROLE, ANSWER_RELEVANCY_VERDICTS, VERDICTS_ANSWER, user
    )


def analyse(
    run: StepRun, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """The statements, then a verdict on each."""
    return (
        yield from extract_then_judge(
            run, case, options, "statements", first_messages, verdict_messages
        )
    )


class StatementVerdictAnalysis(AnalysisModel):
    statement: str = ""
    verdict: YesNoUnsure
    reason: str = ""


class AnswerRelevancyAnalysis(AnalysisModel):
    statements: list[str] = []
    verdicts: list[StatementVerdictAnalysis]


class AnswerRelevancyOptions(CommonOptions):
    uncertainty_weight: Number = Field(
        default=0.3,
        ge=0,
        le=1,
        title="Weight of 'unsure' statements",
        description="An 'unsure' statement counts as this fraction of a relevant one.",
    )


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


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Answer relevancy",
        "description": (
            "Share of the output's statements that address the question; statements "
            "the judge is unsure about count with the uncertainty weight."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output"),
        "direction": "higher",
        "steps": ("statements", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": ["yes", "no", "unsure"]},
        "value_labels": {
            "verdicts.*.verdict": {
                "yes": "relevant",
                "unsure": "partly relevant",
                "no": "irrelevant",
            }
        },
    },
    options=AnswerRelevancyOptions,
    analysis=AnswerRelevancyAnalysis,
    score=score_answer_relevancy,
    steps=(
        Step(NAME, "statements", StatementsReply),
        Step(NAME, "verdicts", AnswerRelevancyVerdictsReply),
        Step(NAME, "reason", ReasonReply),
    ),
    role=ROLE,
    meaning=MEANING,
    reason_items=REASON_ITEMS,
    first_messages=first_messages,
    verdict_messages=verdict_messages,
    analyse=analyse,
)
