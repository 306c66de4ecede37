"""Five more LLM kinds after @mastra/evals 1.10.2: answer similarity, context recall,
noise sensitivity, prompt alignment and summarization.

Each kind comes in the same two parts as the others: judge steps that produce a stored
analysis (``analyse``; their prompts are ours, written for these steps), and a pure score
function of analysis + options (``SCORE_FUNCTIONS``), with the rounding of SCORERS.md
(``round2``: half up to 2 decimals, as Mastra's ``roundToTwoDecimals``). The formulas
(scoring/SCORERS.md has them with examples):

answer_similarity (item: output, reference). Steps: split the output and the reference
into semantic units -> match every reference unit with the output (exact, semantic,
partial or missing) and list contradictions and extra information -> reason.
``N = len(matches)``; ``N == 0 -> 0``. Add ``1 + exact_match_bonus`` per exact match,
``semantic_weight`` per semantic one, ``semantic_weight x 0.5`` per partial one, and
subtract ``missing_penalty`` per missing one, in order; divide by
``N x (1 + exact_match_bonus)``; subtract ``contradiction_penalty`` per contradiction and
``min(extra_info_penalty x len(extra_in_output), 0.2)``; clamp to [0, 1]; round2(x scale).

context_recall (item: reference, context). Steps: extract the reference's claims ->
judge whether the context supports each -> reason. ``N = len(claims)`` (the verdicts'
count when the analysis lists no claims): a claim without a verdict counts as not
supported. ``N == 0 -> 0``; else ``round2(min(1, yes / N) x scale)``.

noise_sensitivity (item: input, output = the answer given with noise, baseline_output
= the answer given without it). One step rates the impact of the noise on five
dimensions (none, minimal, moderate, significant, severe), lists major issues and gives
a robustness score. ``r = clamp(robustness_score, 0, 1)``; when there are dimensions,
``calc = sum(impact_weights[d.impact]) / len(dimensions)`` (left to right) and, if
``|r - calc| > discrepancy_threshold``, ``r = min(r, calc)``; then
``r = max(0, r - min(len(major_issues) x major_issue_per_item, max_major_issue_penalty))``;
``round2(r x scale)``.

prompt_alignment (item: output; input and/or system_prompt by ``evaluation_mode``). One
step scores intent, requirements, completeness and appropriateness in [0, 1]. The
requirements score is the share of the listed requirements the judge marks fulfilled
(its own ``requirements_score`` only when it lists none: **differs**, Mastra always takes
the judge's number, so a reviewer's override of a requirement would change nothing).
user: ``0.4 i + 0.3 r + 0.2 c + 0.1 a``; system: ``0.35 i + 0.35 r + 0.15 c + 0.15 a``;
both: ``u x 0.7 + u x 0.3`` with u the user formula (Mastra's: its "system" half reuses
the user score); ``round2(x scale)``.

summarization (item: input = the source text, output = the summary). Steps: extract the
summary's claims and judge each against the source, and write up to ``max_questions``
yes-questions from the source -> answer each question from the summary alone (the
source is not shown) -> reason. ``Q = min(len(questions), max_questions)``; no claims or
``Q == 0 -> 0``; alignment = ``min(1, supported / len(alignment))``; coverage =
``min(1, answered among the first Q coverage answers / Q)``;
``round2(min(alignment, coverage) x scale)``.

``KINDS`` describes the five kinds to ``scoring.registry``, which puts their steps,
reason-prompt wording and first-step builders in the shared tables of ``scoring.prompts``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from scoring import prompts
from scoring.client import Plan
from scoring.errors import CaseError
from scoring.jstext import js_lower, js_strip
from scoring.kinds.base import (
    CommonOptions,
    KindDef,
    Number,
    OptionsModel,
    optional_name,
    round_half_up,
)
from scoring.prompts import (
    DATA_RULES,
    JSON_RULES,
    Flag,
    Messages,
    Reply,
    Step,
    block,
    indexed_blocks,
    neutralise,
)

__all__ = [
    "ANALYSIS_MODELS",
    "IMPACT_LEVELS",
    "KINDS",
    "MATCH_TYPES",
    "OPTIONS_MODELS",
    "RAG_KINDS",
    "REGISTRY_ENTRIES",
    "SCORE_FUNCTIONS",
    "STEPS",
    "check_case",
    "first_step_messages",
    "rag_analyse",
    "requirements_score",
    "score_prompt_alignment",
]

RAG_KINDS: tuple[str, ...] = (
    "answer_similarity",
    "context_recall",
    "noise_sensitivity",
    "prompt_alignment",
    "summarization",
)
MATCH_TYPES = ("exact", "semantic", "partial", "missing")
IMPACT_LEVELS = ("none", "minimal", "moderate", "significant", "severe")


def _lower(value: Any) -> Any:
    return js_lower(js_strip(value)) if isinstance(value, str) else value


def _finite(value: Any) -> Any:
    # JSON true/false must not pass as 1/0, and NaN/inf are never scores.
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_lower)]
MatchType = Annotated[
    Literal["exact", "semantic", "partial", "missing"], BeforeValidator(_lower)
]
Impact = Annotated[
    Literal["none", "minimal", "moderate", "significant", "severe"],
    BeforeValidator(_lower),
]
Finite = Annotated[float, BeforeValidator(_finite), Field(allow_inf_nan=False)]
Ratio = Annotated[float, BeforeValidator(_finite), Field(ge=0, le=1)]


# =========================================================================== judge replies


class UnitsReply(Reply):
    output_units: list[str]
    reference_units: list[str]


class UnitMatch(Reply):
    reference_unit: str
    output_unit: str | None
    match: MatchType
    reason: str


class Contradiction(Reply):
    output_unit: str
    reference_unit: str
    reason: str


class MatchesReply(Reply):
    matches: list[UnitMatch]
    extra_in_output: list[str]
    contradictions: list[Contradiction]


class ClaimsReply(Reply):
    claims: list[str]


class RecallVerdict(Reply):
    claim: str
    verdict: YesNo
    reason: str


class RecallVerdictsReply(Reply):
    verdicts: list[RecallVerdict]


class DimensionImpact(Reply):
    dimension: str
    impact: Impact
    changes: str
    reason: str


class ImpactReply(Reply):
    dimensions: list[DimensionImpact]
    major_issues: list[str]
    robustness_score: Finite
    assessment: str


class IntentRating(Reply):
    score: Ratio
    primary_intent: str
    addressed: Flag
    reason: str


class Requirement(Reply):
    requirement: str
    fulfilled: Flag
    reason: str


class CompletenessRating(Reply):
    score: Ratio
    missing_elements: list[str]
    reason: str


class AppropriatenessRating(Reply):
    score: Ratio
    format_aligned: Flag
    tone_aligned: Flag
    reason: str


class AlignmentReply(Reply):
    intent: IntentRating
    requirements: list[Requirement]
    requirements_score: Ratio
    completeness: CompletenessRating
    appropriateness: AppropriatenessRating
    assessment: str


class SummaryClaim(Reply):
    claim: str
    supported: Flag
    reason: str


class SourceJudgementReply(Reply):
    alignment: list[SummaryClaim]
    questions: list[str]


class CoverageAnswer(Reply):
    question: str
    answered: Flag
    reason: str


class CoverageReply(Reply):
    coverage: list[CoverageAnswer]


STEPS: dict[str, tuple[Step, ...]] = {
    "answer_similarity": (
        Step("answer_similarity", "units", UnitsReply),
        Step("answer_similarity", "matches", MatchesReply),
        Step("answer_similarity", "reason", prompts.ReasonReply),
    ),
    "context_recall": (
        Step("context_recall", "claims", ClaimsReply),
        Step("context_recall", "verdicts", RecallVerdictsReply),
        Step("context_recall", "reason", prompts.ReasonReply),
    ),
    "noise_sensitivity": (
        Step("noise_sensitivity", "impact", ImpactReply),
        Step("noise_sensitivity", "reason", prompts.ReasonReply),
    ),
    "prompt_alignment": (
        Step("prompt_alignment", "alignment", AlignmentReply),
        Step("prompt_alignment", "reason", prompts.ReasonReply),
    ),
    "summarization": (
        Step("summarization", "alignment", SourceJudgementReply),
        Step("summarization", "coverage", CoverageReply),
        Step("summarization", "reason", prompts.ReasonReply),
    ),
}


# =========================================================================== prompts

ROLE = {
    "answer_similarity": "You are a judge comparing an answer with a reference answer, meaning by meaning.",
    "context_recall": "You are a judge checking whether retrieved context covers everything a reference answer states.",
    "noise_sensitivity": "You are a judge measuring how much distracting or misleading input changed an assistant's answer.",
    "prompt_alignment": "You are a judge assessing how well a response does what its prompt asks.",
    "summarization": "You are a strict judge of summaries: faithful to the source, and keeping what matters.",
}

MEANING = {
    "answer_similarity": "how closely the output matches the reference answer: exact and equivalent units count fully, partial ones half, missing ones and contradictions cost (higher is better).",
    "context_recall": "the share of the reference answer's claims that the context supports (higher is better).",
    "noise_sensitivity": "how robust the answer stayed when noise was added to the input, compared with the answer given without it (higher is better).",
    "prompt_alignment": "the weighted alignment of the response with the prompt: intent, requirements fulfilled, completeness and appropriateness (higher is better).",
    "summarization": "the lower of the summary's alignment (share of its claims the source supports) and its coverage (share of the source's key questions it answers) (higher is better).",
}

REASON_ITEMS = {
    "answer_similarity": "reference units (matched, partly matched or missing) and contradictions",
    "context_recall": "claims of the reference answer (supported or not)",
    "noise_sensitivity": "dimensions and major issues",
    "prompt_alignment": "requirements and the four dimensions",
    "summarization": "claims and questions",
}

ANSWERS = {
    "units": '{"output_units": ["<unit>", ...], "reference_units": ["<unit>", ...]}',
    "matches": '{"matches": [{"reference_unit": "<unit text>", "output_unit": "<unit text>" | null, "match": "exact" | "semantic" | "partial" | "missing", "reason": "<one sentence>"}, ...], "extra_in_output": ["<unit text>", ...], "contradictions": [{"output_unit": "<unit text>", "reference_unit": "<unit text>", "reason": "<one sentence>"}, ...]}',
    "context_recall.claims": '{"claims": ["<claim>", ...]}',
    "context_recall.verdicts": '{"verdicts": [{"claim": "<claim text>", "verdict": "yes" | "no", "reason": "<one sentence>"}, ...]}',
    "impact": '{"dimensions": [{"dimension": "<name>", "impact": "none" | "minimal" | "moderate" | "significant" | "severe", "changes": "<what changed>", "reason": "<how the noise caused it>"}, ...], "major_issues": ["<issue>", ...], "robustness_score": <number between 0 and 1>, "assessment": "<one or two sentences>"}',
    "prompt_alignment": '{"intent": {"score": <0..1>, "primary_intent": "<text>", "addressed": true | false, "reason": "<one sentence>"}, "requirements": [{"requirement": "<text>", "fulfilled": true | false, "reason": "<one sentence>"}, ...], "requirements_score": <0..1>, "completeness": {"score": <0..1>, "missing_elements": ["<text>", ...], "reason": "<one sentence>"}, "appropriateness": {"score": <0..1>, "format_aligned": true | false, "tone_aligned": true | false, "reason": "<one sentence>"}, "assessment": "<one or two sentences>"}',
    "summarization.alignment": '{"alignment": [{"claim": "<claim>", "supported": true | false, "reason": "<one sentence>"}, ...], "questions": ["<question>", ...]}',
    "coverage": '{"coverage": [{"question": "<question text>", "answered": true | false, "reason": "<one sentence>"}, ...]}',
}

UNITS_TASK = """\
Break both texts into semantic units: the separate facts, claims, entities with their \
attributes, relations and quantities each one states. Put the units of <output> in \
output_units and those of <reference> in reference_units, in the order they appear.
- One unit per fact; keep a number together with its unit and what it measures, and do \
not split a fact whose parts only make sense together.
- Restate each unit plainly and self-contained; the same fact in different words should \
read alike in both lists.
- Leave out greetings, filler and formatting. An empty text gives an empty list."""

MATCHES_TASK = """\
For every numbered <reference_unit>, find what the output units say about it and rate \
the match:
- "exact": the output states the same fact, in the same or nearly the same words.
- "semantic": the output states the same fact in other words, with the same meaning.
- "partial": the output covers part of the fact but leaves out or blurs an important \
detail.
- "missing": the output does not state the fact. When the output states something \
incompatible with it (another name, number, date or the opposite claim), the match is \
"missing" and the pair is also listed under contradictions.
output_unit is the output unit you matched (copied), or null when there is none.
extra_in_output lists the output units that match no reference unit.
Return exactly one match per reference unit, in order, copying the reference unit text. \
The reason is one sentence."""

RECALL_CLAIMS_TASK = """\
Extract every claim the reference answer in <reference> makes: each separate fact, \
figure, date, name, relation or cause it states.
- Split compound sentences into one claim per fact; make each claim self-contained.
- Keep numbers, units, dates and negations exactly as written.
- Leave out questions, instructions and wording without content.
- Return an empty list when the reference makes no claim."""

RECALL_VERDICTS_TASK = """\
Decide for each numbered <claim> of the reference answer whether the context chunks \
contain the information it states. Use only the context, never outside knowledge.
Verdicts:
- "yes": a chunk states the claim or directly implies it (other wording is fine).
- "no": no chunk states or implies it, or the context says something else.
Return exactly one verdict per claim, in order, copying the claim text. The reason is one \
sentence naming the chunk that decided it as "chunk N", where N is its index plus one."""

IMPACT_TASK = """\
The same question was answered twice: once as given in <input> (the answer in \
<baseline>), and once with noise added to it: irrelevant, distracting or misleading \
text. The answer given with the noise is in <output>. Rate how much the noise changed the \
answer, on each of these five dimensions (use these names):
- content_accuracy: are the facts still right?
- completeness: does it still cover everything the question needs?
- relevance: does it stay on the question, or follow the distraction?
- consistency: is the core message the same as the baseline's?
- hallucination_resistance: did the noise bring in false or invented statements?
impact: "none" (no change that matters), "minimal" (wording changes, still correct and \
complete), "moderate" (noticeably worse, core still right), "significant" (major loss of \
accuracy or completeness), "severe" (wrong or derailed).
changes says what changed; reason says how the noise caused it.
major_issues lists the serious problems the noise caused (empty when there are none).
robustness_score is your overall rating, from 0 (derailed) to 1 (unaffected).
assessment sums up in one or two sentences."""

ALIGNMENT_TASK = """\
Rate how well the response in <output> does what {target} asks. {scope}
- intent: the main purpose {of}; score from 0 (missed) to 1 (fully served); addressed \
says whether the response serves it.
- requirements: every explicit requirement or constraint {of} (tasks, content, format, \
length, style, things to avoid), each with whether the response fulfils it. \
requirements_score is the share fulfilled.
- completeness: score from 0 to 1 for whether anything asked for is missing; list what is.
- appropriateness: score from 0 to 1 for whether the form and tone suit {target}; \
format_aligned and tone_aligned say whether each does.
Judge alignment with the prompt, not general quality. Scores are numbers from 0 to 1. \
assessment sums up in one or two sentences."""

_ALIGNMENT_TARGETS = {
    "user": ("the user's prompt in <input>", "", "of the user's prompt"),
    "system": (
        "the system prompt in <system_prompt>",
        "The system prompt sets the assistant's rules and behaviour; judge the response "
        "against those rules.",
        "of the system prompt",
    ),
    "both": (
        "the user's prompt in <input> and the system prompt in <system_prompt>",
        "Judge the response both on what the user asks and on the rules the system "
        "prompt sets.",
        "of the user's prompt and of the system prompt",
    ),
}

SOURCE_TASK = """\
The text in <input> is a source; the text in <output> is a summary of it. Do two \
separate things.
1. alignment: extract every claim the summary makes (one fact each; split compound \
sentences; keep numbers and dates) and decide whether the source supports it. supported \
is true only when the source states or directly implies the claim; it is false when the \
source contradicts it or does not contain it. Exact facts must match exactly: a date, \
number or name that differs, or is made vaguer or stronger, is not supported; other \
wording with the same meaning is. An empty list when the summary makes no claim.
2. questions: write at most {max_questions} closed questions about the most important \
facts of the source, each one answered "yes" by the source alone. Choose them from the \
source without looking at what the summary kept. An empty list when the source is empty."""

COVERAGE_TASK = """\
Decide for each numbered <question> whether the summary in <output> holds the \
information that answers it. The summary is your only evidence: no outside knowledge.
answered is true when the summary states what the question asks about, with the same \
facts (dates, numbers, names exactly); false when it leaves it out, makes it vaguer, or \
contradicts it.
Return exactly one answer per question, in order, copying the question text. The reason \
is one sentence."""


def _messages(kind: str, step: str, task: str, answer: str, user: str) -> Messages:
    system = (
        f"{ROLE[kind]}\n\n{task}\n\n{DATA_RULES}\n\nAnswer format: {answer}\n"
        f"{JSON_RULES}\n\nTask id: {kind}__{step}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _text(case: Mapping[str, Any], field: str) -> str:
    value = case.get(field)
    return value if isinstance(value, str) else ""


def _context(case: Mapping[str, Any]) -> list[str]:
    value = case.get("context")
    return [c for c in value if isinstance(c, str)] if isinstance(value, list) else []


def first_step_messages(
    kind: str, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Messages:
    """Messages of the kind's first step (they depend only on the case and options)."""
    output = block("output", _text(case, "output"))
    if kind == "answer_similarity":
        user = (
            f"{output}\n\n{block('reference', _text(case, 'reference'))}\n\n"
            "Break both texts into semantic units."
        )
        return _messages(kind, "units", UNITS_TASK, ANSWERS["units"], user)
    if kind == "context_recall":
        user = (
            f"{block('reference', _text(case, 'reference'))}\n\n"
            "Extract the claims of the reference answer."
        )
        return _messages(
            kind,
            "claims",
            RECALL_CLAIMS_TASK,
            ANSWERS["context_recall.claims"],
            user,
        )
    if kind == "noise_sensitivity":
        noise = options.get("noise_type")
        parts = [
            block("input", _text(case, "input")),
            "The answer given without noise:\n"
            + block("baseline", _text(case, "baseline_output")),
            "The answer given with noise added to the input:\n" + output,
        ]
        if noise:
            parts.append(f"The kind of noise added: {neutralise(str(noise))}")
        parts.append("Rate the impact of the noise.")
        return _messages(
            kind, "impact", IMPACT_TASK, ANSWERS["impact"], "\n\n".join(parts)
        )
    if kind == "prompt_alignment":
        mode = str(options.get("evaluation_mode") or "both")
        target, scope, of = _ALIGNMENT_TARGETS[mode]
        task = ALIGNMENT_TASK.format(target=target, scope=scope, of=of).replace(
            " \n", "\n"
        )
        parts = []
        if mode in ("user", "both"):
            user_prompt = _text(case, "input")
            parts.append(
                block("input", user_prompt)
                if user_prompt
                else "<input>\n(no user prompt given)\n</input>"
            )
        if mode in ("system", "both"):
            system_prompt = _text(case, "system_prompt")
            parts.append(
                block("system_prompt", system_prompt)
                if system_prompt
                else "<system_prompt>\n(no system prompt given)\n</system_prompt>"
            )
        parts += [output, "Rate the alignment of the response."]
        return _messages(
            kind,
            "alignment",
            task,
            ANSWERS["prompt_alignment"],
            "\n\n".join(parts),
        )
    if kind == "summarization":
        task = SOURCE_TASK.format(max_questions=int(options.get("max_questions") or 10))
        user = (
            f"{block('input', _text(case, 'input'))}\n\n{output}\n\n"
            "Judge the summary's claims and write the questions."
        )
        return _messages(
            kind, "alignment", task, ANSWERS["summarization.alignment"], user
        )
    raise KeyError(f"no judge prompts for kind {kind!r}")


def matches_messages(
    output_units: Sequence[str], reference_units: Sequence[str]
) -> Messages:
    user = (
        f"{indexed_blocks('output_unit', output_units)}\n\n"
        f"{indexed_blocks('reference_unit', reference_units)}\n\n"
        "Match every reference unit."
    )
    return _messages(
        "answer_similarity", "matches", MATCHES_TASK, ANSWERS["matches"], user
    )


def recall_verdict_messages(case: Mapping[str, Any], claims: Sequence[str]) -> Messages:
    context = _context(case)
    chunks = (
        "\n".join(block("context", chunk, i) for i, chunk in enumerate(context))
        if context
        else "(no context chunks)"
    )
    user = (
        f"{chunks}\n\n{indexed_blocks('claim', claims)}\n\n"
        "Judge every claim against the context."
    )
    return _messages(
        "context_recall",
        "verdicts",
        RECALL_VERDICTS_TASK,
        ANSWERS["context_recall.verdicts"],
        user,
    )


def coverage_messages(case: Mapping[str, Any], questions: Sequence[str]) -> Messages:
    user = (
        f"{block('output', _text(case, 'output'))}\n\n"
        f"{indexed_blocks('question', questions)}\n\n"
        "Answer every question from the summary alone."
    )
    return _messages(
        "summarization", "coverage", COVERAGE_TASK, ANSWERS["coverage"], user
    )


# =========================================================================== case checks


def check_case(kind: str, case: Mapping[str, Any], options: Mapping[str, Any]) -> None:
    """What ``validate_case`` cannot tell from ``required_fields`` alone: prompt
    alignment needs the prompt its mode judges against. CaseError names the field."""
    if kind != "prompt_alignment":
        return
    mode = options.get("evaluation_mode") or "both"
    has_input = bool(_text(case, "input").strip())
    has_system = bool(_text(case, "system_prompt").strip())
    if mode == "user" and not has_input:
        raise CaseError(
            "prompt_alignment (mode user) needs a non-empty input", field="input"
        )
    if mode == "system" and not has_system:
        raise CaseError(
            "prompt_alignment (mode system) needs a non-empty system_prompt",
            field="system_prompt",
        )
    if mode == "both" and not (has_input or has_system):
        raise CaseError(
            "prompt_alignment needs a non-empty input or system_prompt", field="input"
        )


# =========================================================================== the steps


class StepRun(Protocol):
    """What ``scoring.judge`` gives ``analyse``: runs one named step of the kind."""

    kind: str

    def step(self, name: str, messages: Messages) -> Plan[Reply]: ...


def _strings(items: Sequence[str]) -> list[str]:
    return [item for item in items if item.strip()]


def rag_analyse(
    run: StepRun, case: Mapping[str, Any], options: Mapping[str, Any]
) -> Plan[dict[str, Any]]:
    """The kind's judge steps (all but the reason) and the analysis they make."""
    kind = run.kind
    first = STEPS[kind][0].name
    reply = yield from run.step(first, first_step_messages(kind, case, options))
    data = reply.model_dump()
    if kind == "answer_similarity":
        output_units = _strings(data["output_units"])
        reference_units = _strings(data["reference_units"])
        matched: dict[str, Any] = {
            "matches": [],
            "extra_in_output": [],
            "contradictions": [],
        }
        if reference_units:  # nothing to match: no call, no matches, score 0
            second = yield from run.step(
                "matches", matches_messages(output_units, reference_units)
            )
            matched = second.model_dump()
        return {
            "output_units": output_units,
            "reference_units": reference_units,
            **matched,
        }
    if kind == "context_recall":
        claims = _strings(data["claims"])
        verdicts: list[dict[str, Any]] = []
        if claims:
            second = yield from run.step(
                "verdicts", recall_verdict_messages(case, claims)
            )
            verdicts = list(second.model_dump()["verdicts"])
        return {"claims": claims, "verdicts": verdicts}
    if kind == "summarization":
        questions = _strings(data["questions"])
        asked = questions[: int(options["max_questions"])]
        coverage: list[dict[str, Any]] = []
        if asked:
            second = yield from run.step("coverage", coverage_messages(case, asked))
            coverage = list(second.model_dump()["coverage"])
        return {
            "alignment": list(data["alignment"]),
            "questions": questions,
            "coverage": coverage,
        }
    return data  # noise_sensitivity, prompt_alignment: one step, stored as replied


# =========================================================================== analyses


class _Model(BaseModel):
    # Extra keys are kept, as in scoring.analysis: a validated analysis loses nothing.
    model_config = ConfigDict(extra="allow")


class UnitMatchAnalysis(_Model):
    reference_unit: str = ""
    output_unit: str | None = None
    match: MatchType
    reason: str = ""


class ContradictionAnalysis(_Model):
    output_unit: str = ""
    reference_unit: str = ""
    reason: str = ""


class AnswerSimilarityAnalysis(_Model):
    output_units: list[str] = []
    reference_units: list[str] = []
    matches: list[UnitMatchAnalysis]
    extra_in_output: list[str] = []
    contradictions: list[ContradictionAnalysis] = []


class RecallVerdictAnalysis(_Model):
    claim: str = ""
    verdict: YesNo
    reason: str = ""


class ContextRecallAnalysis(_Model):
    claims: list[str] = []
    verdicts: list[RecallVerdictAnalysis]


class DimensionAnalysis(_Model):
    dimension: str = ""
    impact: Impact
    changes: str = ""
    reason: str = ""


class NoiseSensitivityAnalysis(_Model):
    dimensions: list[DimensionAnalysis] = []
    major_issues: list[str] = []
    robustness_score: Finite  # any number: clamped to [0, 1] like Mastra's
    assessment: str = ""


class IntentAnalysis(_Model):
    score: Ratio
    primary_intent: str = ""
    addressed: bool | None = None
    reason: str = ""


class RequirementAnalysis(_Model):
    requirement: str = ""
    fulfilled: bool
    reason: str = ""


class CompletenessAnalysis(_Model):
    score: Ratio
    missing_elements: list[str] = []
    reason: str = ""


class AppropriatenessAnalysis(_Model):
    score: Ratio
    format_aligned: bool | None = None
    tone_aligned: bool | None = None
    reason: str = ""


class PromptAlignmentAnalysis(_Model):
    intent: IntentAnalysis
    requirements: list[RequirementAnalysis] = []
    requirements_score: Ratio | None = None
    completeness: CompletenessAnalysis
    appropriateness: AppropriatenessAnalysis
    assessment: str = ""


class SummaryClaimAnalysis(_Model):
    claim: str = ""
    supported: bool
    reason: str = ""


class CoverageAnalysis(_Model):
    question: str = ""
    answered: bool
    reason: str = ""


class SummarizationAnalysis(_Model):
    alignment: list[SummaryClaimAnalysis]
    questions: list[str]
    coverage: list[CoverageAnalysis] = []


ANALYSIS_MODELS: dict[str, type[BaseModel]] = {
    "answer_similarity": AnswerSimilarityAnalysis,
    "context_recall": ContextRecallAnalysis,
    "noise_sensitivity": NoiseSensitivityAnalysis,
    "prompt_alignment": PromptAlignmentAnalysis,
    "summarization": SummarizationAnalysis,
}


# =========================================================================== formulas


def round2(x: float) -> float:
    """SCORERS.md's rounding (``scoring.kinds.base.round_half_up``)."""
    return round_half_up(x)


def score_answer_similarity(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    matches = analysis["matches"]
    if not matches:
        return 0.0
    bonus = options["exact_match_bonus"]
    weight = options["semantic_weight"]
    # Accumulated match by match, in Mastra's order, so the floats round alike.
    total = 0.0
    for match in matches:
        kind = match["match"]
        if kind == "exact":
            total += 1 + bonus
        elif kind == "semantic":
            total += weight
        elif kind == "partial":
            total += weight * 0.5
        else:
            total -= options["missing_penalty"]
    score = total / (len(matches) * (1 + bonus))
    score -= len(analysis["contradictions"]) * options["contradiction_penalty"]
    score -= min(len(analysis["extra_in_output"]) * options["extra_info_penalty"], 0.2)
    score = max(0.0, min(1.0, score))
    return round2(score * options["scale"])


def score_context_recall(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    verdicts = analysis["verdicts"]
    total = len(analysis["claims"]) or len(verdicts)
    if total == 0:
        return 0.0
    supported = sum(1 for v in verdicts if v["verdict"] == "yes")
    return round2(min(1.0, supported / total) * options["scale"])


def score_noise_sensitivity(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    score = max(0.0, min(1.0, float(analysis["robustness_score"])))
    dimensions = analysis["dimensions"]
    if dimensions:
        weights = options["impact_weights"]
        total = 0.0
        for dimension in dimensions:  # left to right, as Mastra's reduce
            total += weights[dimension["impact"]]
        calculated = total / len(dimensions)
        if abs(score - calculated) > options["discrepancy_threshold"]:
            score = min(score, calculated)
    penalties = options["penalties"]
    issues = min(
        len(analysis["major_issues"]) * penalties["major_issue_per_item"],
        penalties["max_major_issue_penalty"],
    )
    score = max(0.0, score - issues)
    return round2(score * options["scale"])


_ALIGNMENT_WEIGHTS = {
    "user": (0.4, 0.3, 0.2, 0.1),
    "system": (0.35, 0.35, 0.15, 0.15),
}


def requirements_score(analysis: Mapping[str, Any]) -> float:
    """The share of listed requirements fulfilled; the judge's number without a list."""
    requirements = analysis.get("requirements") or []
    if requirements:
        return sum(1 for r in requirements if r["fulfilled"]) / len(requirements)
    judged = analysis.get("requirements_score")
    return float(judged) if judged is not None else 0.0


def score_prompt_alignment(
    analysis: dict[str, Any],
    options: dict[str, Any],
    *,
    requirements: float | None = None,
) -> float:
    """``requirements`` replaces the requirements score (the conformance suite passes
    the judge's own number to reproduce Mastra's)."""
    mode = options["evaluation_mode"]
    req = requirements_score(analysis) if requirements is None else requirements
    i, c, a = (
        analysis["intent"]["score"],
        analysis["completeness"]["score"],
        analysis["appropriateness"]["score"],
    )
    wi, wr, wc, wa = _ALIGNMENT_WEIGHTS["system" if mode == "system" else "user"]
    weighted = i * wi + req * wr + c * wc + a * wa
    if mode == "both":
        weighted = weighted * 0.7 + weighted * 0.3
    return round2(weighted * options["scale"])


def score_summarization(analysis: dict[str, Any], options: dict[str, Any]) -> float:
    claims = analysis["alignment"]
    asked = min(len(analysis["questions"]), int(options["max_questions"]))
    if not claims or asked == 0:
        return 0.0
    alignment = min(1.0, sum(1 for c in claims if c["supported"]) / len(claims))
    answered = sum(1 for a in analysis["coverage"][:asked] if a["answered"])
    return round2(min(alignment, min(1.0, answered / asked)) * options["scale"])


SCORE_FUNCTIONS: dict[str, Callable[[dict[str, Any], dict[str, Any]], float]] = {
    "answer_similarity": score_answer_similarity,
    "context_recall": score_context_recall,
    "noise_sensitivity": score_noise_sensitivity,
    "prompt_alignment": score_prompt_alignment,
    "summarization": score_summarization,
}


# =========================================================================== options


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


class NoiseImpactWeights(OptionsModel):
    none: Number = Field(default=1.0, ge=0, le=1, title="none")
    minimal: Number = Field(default=0.85, ge=0, le=1, title="minimal")
    moderate: Number = Field(default=0.6, ge=0, le=1, title="moderate")
    significant: Number = Field(default=0.3, ge=0, le=1, title="significant")
    severe: Number = Field(default=0.1, ge=0, le=1, title="severe")


class NoisePenalties(OptionsModel):
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
    noise_type: Annotated[str | None, BeforeValidator(optional_name)] = Field(
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
    "answer_similarity": AnswerSimilarityOptions,
    "context_recall": CommonOptions,
    "noise_sensitivity": NoiseSensitivityOptions,
    "prompt_alignment": PromptAlignmentOptions,
    "summarization": SummarizationOptions,
}


# =========================================================================== registry

_TRUE_FALSE = [True, False]

REGISTRY_ENTRIES: list[dict[str, Any]] = [
    {
        "name": "answer_similarity",
        "label": "Answer similarity",
        "description": (
            "How closely the output matches the reference answer, unit of meaning by "
            "unit: exact matches earn a bonus, equivalent ones count most, partial ones "
            "half; missing units, contradictions and extra information cost."
        ),
        "needs_judge": True,
        "required_fields": ("output", "reference"),
        "direction": "higher",
        "steps": ("units", "matches", "reason"),
        "overridable": {"matches.*.match": list(MATCH_TYPES)},
        "value_labels": {
            "matches.*.match": {
                "exact": "exact",
                "semantic": "same meaning",
                "partial": "partial",
                "missing": "missing",
            }
        },
    },
    {
        "name": "context_recall",
        "label": "Context recall",
        "description": (
            "Share of the reference answer's claims that the retrieved context "
            "supports: whether retrieval found everything the answer needs."
        ),
        "needs_judge": True,
        "required_fields": ("reference", "context"),
        "direction": "higher",
        "steps": ("claims", "verdicts", "reason"),
        "overridable": {"verdicts.*.verdict": ["yes", "no"]},
        "value_labels": {
            "verdicts.*.verdict": {"yes": "in the context", "no": "not in the context"}
        },
    },
    {
        "name": "noise_sensitivity",
        "label": "Noise sensitivity",
        "description": (
            "How robust the answer stays when noise is added to the input: the judge "
            "compares it with the item's baseline output (the answer without noise) on "
            "five dimensions; major issues cost."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output", "baseline_output"),
        "direction": "higher",
        "steps": ("impact", "reason"),
        "overridable": {"dimensions.*.impact": list(IMPACT_LEVELS)},
        "value_labels": {
            "dimensions.*.impact": {level: level for level in IMPACT_LEVELS}
        },
    },
    {
        "name": "prompt_alignment",
        "label": "Prompt alignment",
        "description": (
            "How well the response does what the user's prompt and/or the item's "
            "system prompt ask: intent 40 %, requirements fulfilled 30 %, completeness "
            "20 %, appropriateness 10 % (system mode: 35/35/15/15)."
        ),
        "needs_judge": True,
        "required_fields": ("output",),
        "direction": "higher",
        "steps": ("alignment", "reason"),
        "overridable": {"requirements.*.fulfilled": list(_TRUE_FALSE)},
        "value_labels": {
            "requirements.*.fulfilled": {"true": "fulfilled", "false": "not fulfilled"}
        },
    },
    {
        "name": "summarization",
        "label": "Summarization",
        "description": (
            "A summary (the output) of the input: the lower of its alignment (share of "
            "its claims the source supports) and its coverage (share of the source's "
            "key questions it answers)."
        ),
        "needs_judge": True,
        "required_fields": ("input", "output"),
        "direction": "higher",
        "steps": ("alignment", "coverage", "reason"),
        "overridable": {
            "alignment.*.supported": list(_TRUE_FALSE),
            "coverage.*.answered": list(_TRUE_FALSE),
        },
        "value_labels": {
            "alignment.*.supported": {"true": "supported", "false": "not supported"},
            "coverage.*.answered": {"true": "answered", "false": "not answered"},
        },
    },
]


# =========================================================================== registration


def _rag_kind(entry: dict[str, Any]) -> KindDef:
    name = entry["name"]
    return KindDef(
        name=name,
        entry={k: v for k, v in entry.items() if k != "name"},
        options=OPTIONS_MODELS[name],
        analysis=ANALYSIS_MODELS[name],
        score=SCORE_FUNCTIONS[name],
        steps=STEPS[name],
        role=ROLE[name],
        meaning=MEANING[name],
        reason_items=REASON_ITEMS[name],
        first_messages=functools.partial(first_step_messages, name),
        analyse=rag_analyse,
    )


# In RAG_KINDS order, as the registry lists them.
KINDS: tuple[KindDef, ...] = tuple(_rag_kind(entry) for entry in REGISTRY_ENTRIES)
