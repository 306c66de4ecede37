"""The offline judge's answers for scoring.kinds.rag's steps: answer similarity, context
recall, noise sensitivity, prompt alignment and summarization.

Deterministic word-overlap heuristics built on ``heuristics`` (stems without stopwords,
number and negation conflicts): the same request always gets the same reply. They are
heuristics, not an LLM's judgement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from scoring.offline_judge.heuristics import (
    content_words,
    negation_conflict,
    number_conflict,
    numbers,
    proper_nouns,
    sentences,
    units,
    verdict_for_claim,
)

__all__ = ["rag_answer"]

_BLOCK_RE = re.compile(
    r"<(input|output|reference|context|claim|baseline|system_prompt|output_unit"
    r'|reference_unit|question|analysis|score)(?: index="(\d+)")?>\n(.*?)\n</\1>',
    re.S,
)
_NOT_GIVEN = (
    "(not given)",
    "(no input given)",
    "(no user prompt given)",
    "(no system prompt given)",
)
_MAX_QUESTIONS_RE = re.compile(r"at most (\d+) closed questions")

# Shares of a unit's content words found in the other text, for each match level.
EXACT_SHARE = 0.9
SEMANTIC_SHARE = 0.6
PARTIAL_SHARE = 0.3


class _Blocks:
    def __init__(self, text: str) -> None:
        self.single: dict[str, str] = {}
        self.indexed: dict[str, dict[int, str]] = {}
        for tag, index, body in _BLOCK_RE.findall(text):
            body = body.replace("&lt;", "<")
            if index:
                self.indexed.setdefault(tag, {})[int(index)] = body
            else:
                self.single.setdefault(tag, body)

    def get(self, tag: str) -> str:
        value = self.single.get(tag, "")
        return "" if value in _NOT_GIVEN else value

    def items(self, tag: str) -> list[str]:
        found = self.indexed.get(tag, {})
        return [found[i] for i in sorted(found)]


def _blocks(body: Mapping[str, Any]) -> _Blocks:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(
                    str(p.get("text", "")) for p in content if isinstance(p, dict)
                )
            return _Blocks(str(content or ""))
    return _Blocks("")


def _system_text(body: Mapping[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            return str(message.get("content") or "")
    return ""


def _share(part: set[str], whole: set[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def _conflicts(text: str, other: str) -> bool:
    """Whether ``text`` states a number or a negation that ``other`` contradicts."""
    issue = number_conflict(text, other)
    if issue is not None and issue[0] == "no":
        return True
    return negation_conflict(text, units(other)) is not None


# --------------------------------------------------------------- answer similarity


def _match(unit: str, candidates: Sequence[str]) -> tuple[str, str | None, bool, str]:
    """(match type, the output unit matched, contradiction?, reason) for one unit."""
    words = content_words(unit)
    if not candidates or not words:
        return "missing", None, False, "The output says nothing about this."
    shares = [_share(words, content_words(c)) for c in candidates]
    best = max(range(len(candidates)), key=lambda i: shares[i])
    candidate, share = candidates[best], shares[best]
    if share >= PARTIAL_SHARE and _conflicts(candidate, unit):
        return "missing", candidate, True, "The output states something incompatible."
    if share >= EXACT_SHARE and numbers(unit) == numbers(candidate):
        return "exact", candidate, False, "The output states the same fact."
    if share >= SEMANTIC_SHARE:
        return "semantic", candidate, False, "The output states it in other words."
    if share >= PARTIAL_SHARE:
        return "partial", candidate, False, "The output covers part of it."
    return "missing", None, False, "The output says nothing about this."


def _matches(blocks: _Blocks) -> dict[str, Any]:
    output_units = blocks.items("output_unit")
    matches: list[dict[str, Any]] = []
    contradictions: list[dict[str, Any]] = []
    used: set[str] = set()
    for unit in blocks.items("reference_unit"):
        match, output_unit, contradicted, reason = _match(unit, output_units)
        matches.append(
            {
                "reference_unit": unit,
                "output_unit": output_unit,
                "match": match,
                "reason": reason,
            }
        )
        if output_unit is not None:
            used.add(output_unit)
        if contradicted and output_unit is not None:
            contradictions.append(
                {"output_unit": output_unit, "reference_unit": unit, "reason": reason}
            )
    reference_words = set().union(
        *(content_words(u) for u in blocks.items("reference_unit"))
    )
    extra = [
        u
        for u in output_units
        if u not in used and _share(content_words(u), reference_words) < PARTIAL_SHARE
    ]
    return {
        "matches": matches,
        "extra_in_output": extra,
        "contradictions": contradictions,
    }


# --------------------------------------------------------------- noise sensitivity

_LEVELS = ("none", "minimal", "moderate", "significant", "severe")
_WEIGHTS = {
    "none": 1.0,
    "minimal": 0.85,
    "moderate": 0.6,
    "significant": 0.3,
    "severe": 0.1,
}


def _level(loss: float) -> str:
    """An impact level for a loss between 0 (nothing lost) and 1 (everything)."""
    for bound, level in ((0.1, "none"), (0.3, "minimal"), (0.5, "moderate")):
        if loss <= bound:
            return level
    return "significant" if loss <= 0.75 else "severe"


def _impact(blocks: _Blocks) -> dict[str, Any]:
    question, baseline, output = (
        blocks.get("input"),
        blocks.get("baseline"),
        blocks.get("output"),
    )
    base_words, out_words = content_words(baseline), content_words(output)
    known = base_words | content_words(question)
    conflict = bool(baseline) and _conflicts(output, baseline)
    novel_names = {n for n in proper_nouns(output) if n not in known}
    novel_numbers = numbers(output) - numbers(baseline) - numbers(question)
    coverage_loss = 1 - _share(base_words, out_words) if base_words else 1.0
    drift = 1 - _share(out_words, known) if out_words else 1.0
    overlap = len(base_words & out_words) / max(1, len(base_words | out_words))
    dimensions = [
        (
            "content_accuracy",
            "significant" if conflict else _level(coverage_loss / 2),
            "The answer contradicts the baseline."
            if conflict
            else "The facts match the baseline's.",
        ),
        (
            "completeness",
            _level(coverage_loss),
            f"{round(100 * (1 - coverage_loss))} % of the baseline's key words remain.",
        ),
        (
            "relevance",
            _level(drift),
            f"{round(100 * drift)} % of the answer's key words are new.",
        ),
        (
            "consistency",
            _level(1 - overlap),
            "Compared word by word with the baseline.",
        ),
        (
            "hallucination_resistance",
            "moderate" if (novel_names or novel_numbers) else "none",
            "New names or numbers appear."
            if (novel_names or novel_numbers)
            else "Nothing new is asserted.",
        ),
    ]
    issues = [
        f"{name.replace('_', ' ')}: {reason}"
        for name, level, reason in dimensions
        if level in ("significant", "severe")
    ]
    robustness = sum(_WEIGHTS[level] for _, level, _ in dimensions) / len(dimensions)
    return {
        "dimensions": [
            {
                "dimension": name,
                "impact": level,
                "changes": reason,
                "reason": "Measured against the answer given without noise.",
            }
            for name, level, reason in dimensions
        ],
        "major_issues": issues,
        "robustness_score": round(robustness, 2),
        "assessment": (
            "The answer held up against the noise."
            if not issues
            else f"The noise hurt the answer: {len(issues)} major issue(s)."
        ),
    }


# --------------------------------------------------------------- prompt alignment

_PROHIBITION_RE = re.compile(r"\b(?:never|don't|do not|avoid|no)\b\s+(.*)", re.I)


def _requirement(text: str, output: str) -> tuple[bool, str]:
    """A prohibition ("never mention prices") is fulfilled when the output avoids its
    words; anything else when the output has half of the requirement's key words."""
    out_words = content_words(output)
    prohibition = _PROHIBITION_RE.search(text)
    if prohibition:
        banned = content_words(prohibition.group(1))
        hit = banned & out_words
        if hit:
            return False, f"The response mentions what it should not: {text}"
        return True, "The response avoids it."
    words = content_words(text)
    share = _share(words, out_words)
    if share >= 0.5 or not words:
        return True, f"The response covers {round(100 * share)} % of its key words."
    return False, f"The response covers only {round(100 * share)} % of its key words."


def _alignment(blocks: _Blocks) -> dict[str, Any]:
    output = blocks.get("output")
    user, system = blocks.get("input"), blocks.get("system_prompt")
    requirements = []
    for text in sentences(user) + sentences(system):
        fulfilled, reason = _requirement(text, output)
        if (
            not fulfilled
            and text not in sentences(user)
            and not _PROHIBITION_RE.search(text)
        ):
            # A system rule of manner ("answer in English") has no words to find.
            fulfilled, reason = True, "A rule of manner: assumed to be followed."
        requirements.append(
            {"requirement": text, "fulfilled": fulfilled, "reason": reason}
        )
    met = sum(1 for r in requirements if r["fulfilled"])
    share = met / len(requirements) if requirements else (1.0 if output else 0.0)
    intent_share = _share(content_words(user or system), content_words(output))
    intent = round(min(1.0, intent_share * 1.5), 2) if output else 0.0
    missing = [r["requirement"] for r in requirements if not r["fulfilled"]]
    appropriate = 1.0 if output.strip() else 0.0
    return {
        "intent": {
            "score": intent,
            "primary_intent": (sentences(user or system) or [""])[0],
            "addressed": intent >= 0.5,
            "reason": f"The response shares {round(100 * intent_share)} % of the prompt's key words.",
        },
        "requirements": requirements,
        "requirements_score": round(share, 2),
        "completeness": {
            "score": round(share, 2),
            "missing_elements": missing,
            "reason": "Nothing asked for is missing."
            if not missing
            else f"{len(missing)} requirement(s) not met.",
        },
        "appropriateness": {
            "score": appropriate,
            "format_aligned": bool(appropriate),
            "tone_aligned": bool(appropriate),
            "reason": "A plain text response.",
        },
        "assessment": f"{met} of {len(requirements)} requirements met.",
    }


# --------------------------------------------------------------- summarization

_QUESTION_PREFIX = "Does the source state that "


def _source_judgement(blocks: _Blocks, system: str) -> dict[str, Any]:
    source, summary = blocks.get("input"), blocks.get("output")
    alignment = []
    for claim in sentences(summary):
        verdict, reason = verdict_for_claim(claim, [source] if source else [])
        alignment.append(
            {"claim": claim, "supported": verdict == "yes", "reason": reason}
        )
    limit = _MAX_QUESTIONS_RE.search(system)
    most = int(limit.group(1)) if limit else 10
    facts = [s for s in sentences(source) if content_words(s)][:most]
    questions = [f"{_QUESTION_PREFIX}{s.rstrip('.!?')}?" for s in facts]
    return {"alignment": alignment, "questions": questions}


def _coverage(blocks: _Blocks) -> dict[str, Any]:
    summary = blocks.get("output")
    answers = []
    for question in blocks.items("question"):
        fact = question.removeprefix(_QUESTION_PREFIX).rstrip("?")
        share = _share(content_words(fact), content_words(summary))
        answered = share >= 0.6 and not _conflicts(summary, fact)
        answers.append(
            {
                "question": question,
                "answered": answered,
                "reason": f"The summary has {round(100 * share)} % of its key words"
                + ("." if answered else ", not enough to answer it."),
            }
        )
    return {"coverage": answers}


# --------------------------------------------------------------- reason


def _reason(kind: str, blocks: _Blocks) -> str:
    score = blocks.get("score").split(" on a scale")[0].strip() or "?"
    try:
        analysis = json.loads(blocks.get("analysis"))
    except json.JSONDecodeError:
        analysis = {}
    if not isinstance(analysis, dict):
        analysis = {}
    if kind == "answer_similarity":
        counts: dict[str, int] = {}
        for match in analysis.get("matches") or []:
            counts[str(match.get("match"))] = counts.get(str(match.get("match")), 0) + 1
        summary = ", ".join(f"{n} {m}" for m, n in sorted(counts.items()))
        contradictions = len(analysis.get("contradictions") or [])
        return (
            f"The score is {score}: reference units {summary or 'none'}; "
            f"{contradictions} contradiction(s)."
        )
    if kind == "context_recall":
        verdicts = analysis.get("verdicts") or []
        yes = sum(1 for v in verdicts if v.get("verdict") == "yes")
        return f"The score is {score}: the context supports {yes} of the reference's {len(analysis.get('claims') or verdicts)} claims."
    if kind == "noise_sensitivity":
        impacts = ", ".join(
            f"{d.get('dimension')} {d.get('impact')}"
            for d in analysis.get("dimensions") or []
        )
        return f"The score is {score}: impact of the noise: {impacts or 'not rated'}."
    if kind == "prompt_alignment":
        requirements = analysis.get("requirements") or []
        met = sum(1 for r in requirements if r.get("fulfilled"))
        return f"The score is {score}: {met} of {len(requirements)} requirements met."
    claims = analysis.get("alignment") or []
    coverage = analysis.get("coverage") or []
    return (
        f"The score is {score}: the source supports "
        f"{sum(1 for c in claims if c.get('supported'))} of {len(claims)} claims; the "
        f"summary answers {sum(1 for c in coverage if c.get('answered'))} of "
        f"{len(coverage)} questions."
    )


# --------------------------------------------------------------- entry point


def rag_answer(kind: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The reply object for one of the kinds' steps; KeyError for an unknown step."""
    blocks = _blocks(body)
    step = f"{kind}__{name}"
    if step == "answer_similarity__units":
        return {
            "output_units": sentences(blocks.get("output")),
            "reference_units": sentences(blocks.get("reference")),
        }
    if step == "answer_similarity__matches":
        return _matches(blocks)
    if step == "context_recall__claims":
        found = sentences(blocks.get("reference"))
        return {"claims": [s for s in found if content_words(s) or numbers(s)] or found}
    if step == "context_recall__verdicts":
        context = blocks.items("context")
        verdicts = []
        for claim in blocks.items("claim"):
            verdict, reason = verdict_for_claim(claim, context)
            verdicts.append(
                {
                    "claim": claim,
                    "verdict": "yes" if verdict == "yes" else "no",
                    "reason": reason,
                }
            )
        return {"verdicts": verdicts}
    if step == "noise_sensitivity__impact":
        return _impact(blocks)
    if step == "prompt_alignment__alignment":
        return _alignment(blocks)
    if step == "summarization__alignment":
        return _source_judgement(blocks, _system_text(body))
    if step == "summarization__coverage":
        return _coverage(blocks)
    if name == "reason":
        return {"reason": _reason(kind, blocks)}
    raise KeyError(step)
