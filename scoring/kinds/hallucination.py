"""Hallucination: the share of the output's claims that the context does not support.
Lower is better.

Steps: extract the output's claims (``scoring.prompts.CLAIM_EXTRACTION``, shared with
faithfulness) -> decide for each whether it is a hallucination -> reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scoring.client import Plan
from scoring.kinds.base import (
    AnalysisModel,
    CommonOptions,
    KindDef,
    StepRun,
    YesNo,
    extract_then_judge,
    share_of_yes,
)
from scoring.prompts import (
    CLAIM_ANSWER,
    CLAIM_EXTRACTION,
    ClaimsReply,
    Messages,
    ReasonReply,
    Reply,
    Step,
    block,
    context_blocks,
    context_field,
    indexed_blocks,
    kind_messages,
    text_field,
)
from scoring.prompts import YesNo as ReplyYesNo

NAME = "hallucination"

ROLE = "You are a careful fact-checking judge detecting hallucinations in a response with respect to its retrieved context."
MEANING = "the share of the output's claims that are hallucinated, i.e. contradicted or unsupported by the context (lower is better)."
REASON_ITEMS = "claims (hallucinated or supported)"
VERDICTS_ANSWER = '{"verdicts": [{"claim": "<claim text>", "verdict": "yes" | "no", "reason": "<one sentence>"}, ...]}'

HALLUCINATION_VERDICTS = """\
Decide for each numbered <claim> whether it is a hallucination with respect to the \
context chunks. Use only the context, never outside knowledge.
Verdicts:
- "yes": the claim IS a hallucination: it contradicts the context, or the context does \
not support it (including speculation about facts the context does not contain).
- "no": the claim is supported by the context. Reasonable approximations of numbers and \
dates (e.g. "about 2 million" for 2.1 million, "early 1990s" for 1991) count as supported.
Return exactly one verdict per claim, in the order of the claims, copying the claim text. \
The reason is one sentence naming the context chunk that decided it as "chunk N", \
where N is its index plus one."""


class HallucinationVerdict(Reply):
    claim: str
    verdict: ReplyYesNo
    reason: str


class HallucinationVerdictsReply(Reply):
    verdicts: list[HallucinationVerdict]


def first_messages(case: Mapping[str, Any], options: Mapping[str, Any]) -> Messages:
    output = block("output", text_field(case, "output"))
    return kind_messages(
        NAME,
        "claims",
        ROLE,
        CLAIM_EXTRACTION,
        CLAIM_ANSWER,
        f"{output}\n\nExtract the claims made in <output>.",
    )


def verdict_messages(case: Mapping[str, Any], items: Sequence[str]) -> Messages:
    user = (
        f"{context_blocks(context_field(case))}\n\n{indexed_blocks('claim', items)}\n\n"
        "Judge every claim against the context."
    )
    return kind_messages(
        NAME, "verdicts", ROLE, HALLUCINATION_VERDICTS, VERDICTS_ANSWER, user
    )


def analyse(
    run: StepRun, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """The claims, then a verdict on each."""
    return (
        yield from extract_then_judge(
            run, case, options, "claims", first_messages, verdict_messages
        )
    )


class HallucinationVerdictAnalysis(AnalysisModel):
    claim: str = ""
    verdict: YesNo  # yes = the claim IS a hallucination
    reason: str = ""


class HallucinationAnalysis(AnalysisModel):
    claims: list[str] = []
    verdicts: list[HallucinationVerdictAnalysis]


def score(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """yes (= hallucinated) / N x scale; no verdicts -> 0. Lower is better."""
    return share_of_yes(analysis["verdicts"], options["scale"])


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Hallucination",
        "description": (
            "Share of the output's claims that the context does not support "
            "(contradicted, or invented). Lower is better."
        ),
        "needs_judge": True,
        "required_fields": ("output", "context"),
        "direction": "lower",
        "steps": ("claims", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": ["yes", "no"]},
        "value_labels": {
            "verdicts.*.verdict": {"yes": "hallucinated", "no": "supported"}
        },
    },
    options=CommonOptions,
    analysis=HallucinationAnalysis,
    score=score,
    steps=(
        Step(NAME, "claims", ClaimsReply),
        Step(NAME, "verdicts", HallucinationVerdictsReply),
        Step(NAME, "reason", ReasonReply),
    ),
    role=ROLE,
    meaning=MEANING,
    reason_items=REASON_ITEMS,
    first_messages=first_messages,
    verdict_messages=verdict_messages,
    analyse=analyse,
)
