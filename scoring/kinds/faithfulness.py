"""Faithfulness: the share of the output's claims that the context supports.

Steps: extract the output's claims (``scoring.prompts.CLAIM_EXTRACTION``, shared with
hallucination) -> judge each claim against the context -> reason.
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
    YesNoUnsure,
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
from scoring.prompts import YesNoUnsure as ReplyYesNoUnsure

NAME = "faithfulness"

ROLE = "You are a careful fact-checking judge evaluating whether a response is faithful to its retrieved context."
MEANING = "the share of the output's claims that the context supports (higher is better; unsure counts as unsupported)."
REASON_ITEMS = "claims (supported, contradicted or unverifiable)"
VERDICTS_ANSWER = '{"verdicts": [{"claim": "<claim text>", "verdict": "yes" | "no" | "unsure", "reason": "<one sentence>"}, ...]}'

FAITHFULNESS_VERDICTS = """\
Decide for each numbered <claim> whether the context chunks support it. Use only the \
context, never outside knowledge, even when you know the claim to be true or false.
Verdicts:
- "yes": the context states the claim or directly entails it.
- "no": the context contradicts the claim (a different number, date, name or place, a \
negation, or an incompatible fact).
- "unsure": the context neither supports nor contradicts the claim (the topic is not \
mentioned, or only partly). Speculation about things the context does not state is \
"unsure".
Return exactly one verdict per claim, in the order of the claims, copying the claim text. \
The reason is one sentence naming the context chunk that decided it as "chunk N", \
where N is its index plus one."""


class ClaimVerdict(Reply):
    claim: str
    verdict: ReplyYesNoUnsure
    reason: str


class FaithfulnessVerdictsReply(Reply):
    verdicts: list[ClaimVerdict]


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
        NAME, "verdicts", ROLE, FAITHFULNESS_VERDICTS, VERDICTS_ANSWER, user
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


class ClaimVerdictAnalysis(AnalysisModel):
    claim: str = ""
    verdict: YesNoUnsure
    reason: str = ""


class FaithfulnessAnalysis(AnalysisModel):
    claims: list[str] = []
    verdicts: list[ClaimVerdictAnalysis]


def score(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    """yes / N x scale; no verdicts -> 0; unsure counts as unsupported."""
    return share_of_yes(analysis["verdicts"], options["scale"])


KIND = KindDef(
    name=NAME,
    entry={
        "label": "Faithfulness",
        "description": (
            "Share of the claims in the output that the context supports. Claims that "
            "contradict the context or cannot be verified from it count against the "
            "answer; an output without claims scores 0."
        ),
        "needs_judge": True,
        "required_fields": ("output", "context"),
        "direction": "higher",
        "steps": ("claims", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": ["yes", "no", "unsure"]},
        "value_labels": {
            "verdicts.*.verdict": {
                "yes": "supported",
                "no": "contradicted",
                "unsure": "unverifiable",
            }
        },
    },
    options=CommonOptions,
    analysis=FaithfulnessAnalysis,
    score=score,
    steps=(
        Step(NAME, "claims", ClaimsReply),
        Step(NAME, "verdicts", FaithfulnessVerdictsReply),
        Step(NAME, "reason", ReasonReply),
    ),
    role=ROLE,
    meaning=MEANING,
    reason_items=REASON_ITEMS,
    first_messages=first_messages,
    verdict_messages=verdict_messages,
    analyse=analyse,
)
