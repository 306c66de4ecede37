"""The differential suite's part for scoring.kinds.rag's kinds: answer similarity,
context recall, noise sensitivity, prompt alignment and summarization.

Cases (``make_case``), the scripted judge's answers for both sides (``answer``: ours in
our step shapes, Mastra's in its schemas' shapes) and the checks of the documented rows these
kinds can reproduce (``ROW_CHECKS``). The scripts hold what the judge decides; each side
receives it shaped as its own steps ask, so both score the same analysis.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from conformance.cases import Case, _scale, _text
from scoring import validate_options
from scoring.kinds.rag import (
    IMPACT_LEVELS,
    MATCH_TYPES,
    RAG_KINDS,
    score_prompt_alignment,
)

if TYPE_CHECKING:
    from conformance.run import Outcome

__all__ = ["RAG_KINDS", "ROW_CHECKS", "answer", "make_case"]


def _reason(index: int) -> str:
    return f"scripted reason {index}"


def _folded(rng: random.Random, word: str, rows: set[str], fold: bool) -> str:
    """``word`` as a judge might write it: sometimes in capitals or with spaces."""
    if fold and rng.random() < 0.5:
        rows.add("verdict-case-and-space")
        return rng.choice([word.upper(), word.capitalize(), f" {word}", f"{word} "])
    return word


def _sentences(rng: random.Random, what: str, n: int) -> list[str]:
    return [
        f"{what} {i}: " + _text(rng, flavour="plain", sentences=1) for i in range(n)
    ]


def _choice(rng: random.Random, values: list[Any]) -> Any:
    return rng.choice(values)


# ------------------------------------------------------------------ answer similarity

_SIMILARITY_OPTIONS = {
    "exact_match_bonus": ("exactMatchBonus", [0, 0.1, 0.2, 0.3, 0.5, 1]),
    "semantic_weight": ("semanticThreshold", [0.5, 0.7, 0.8, 0.9, 1]),
    "missing_penalty": ("missingPenalty", [0, 0.1, 0.15, 0.25, 0.5]),
    "contradiction_penalty": ("contradictionPenalty", [0, 0.1, 0.25, 0.5, 1]),
    "extra_info_penalty": ("extraInfoPenalty", [0, 0.02, 0.05, 0.1]),
}


def _answer_similarity(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    reference_units = _sentences(rng, "fact", rng.choice([0, 1, 2, 3, 4, 5, 6, 8]))
    output_units = _sentences(rng, "unit", rng.choice([0, 1, 2, 3, 4, 5]))
    fold = rng.random() < 0.08
    matches = [
        _folded(rng, rng.choice(MATCH_TYPES), rows, fold) for _ in reference_units
    ]
    extra = [u for u in output_units if rng.random() < 0.3]
    contradictions = rng.choice([0, 0, 0, 0, 1, 1, 2])
    scale = _scale(rng)
    options: dict[str, Any] = {"scale": scale}
    given: dict[str, Any] = {"scale": scale}
    for ours_name, (their_name, values) in _SIMILARITY_OPTIONS.items():
        if rng.random() < 0.25:
            options[ours_name] = given[their_name] = rng.choice(values)
    theirs: dict[str, Any] | None = given
    if rng.random() < 0.08:
        options, theirs = {}, None  # both defaults
    reference = "Reference: " + _text(rng, flavour="plain")
    if rng.random() < 0.03:
        reference = ""  # both refuse it: Mastra requires a ground truth by default
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
        "reference": reference,
    }
    return Case(
        id=f"answer_similarity-{index:04d}",
        kind="answer_similarity",
        item=item,
        options=options,
        theirs={
            "scorer": "answer_similarity",
            "input": item["input"],
            "output": item["output"],
            "ground_truth": reference,
            "options": theirs,
        },
        script={
            "kind": "answer_similarity",
            "output_units": output_units,
            "reference_units": reference_units,
            "matches": matches,
            "extra": extra,
            "contradictions": contradictions,
        },
        rows=sorted(rows),
    )


# ------------------------------------------------------------------ context recall

_RECALL_ODD = ["unsure", "maybe", "n/a", "", "partially"]


def _context_recall(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    claims = _sentences(rng, "claim", rng.choice([0, 1, 2, 3, 3, 4, 5, 6, 8, 10]))
    count = len(claims)
    if claims and rng.random() < 0.1:  # the judge returns one verdict fewer or more
        count = max(1, count + rng.choice([-1, 1]))
    verdicts = [
        rng.choice(["yes", "no", "YES", " yes", "No", "yes\n"]) for _ in range(count)
    ]
    if verdicts and rng.random() < 0.06:
        verdicts[rng.randrange(len(verdicts))] = rng.choice(_RECALL_ODD)
        rows.add("verdict-off-vocabulary")
    context = [
        _text(rng, flavour="plain", sentences=1) for _ in range(rng.randint(1, 5))
    ]
    reference = "Reference: " + _text(rng, flavour="plain")
    if rng.random() < 0.04:
        reference = ""
        rows.add("blank-reference")
    scale = _scale(rng)
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
        "reference": reference,
        "context": context,
    }
    return Case(
        id=f"context_recall-{index:04d}",
        kind="context_recall",
        item=item,
        options={"scale": scale},
        theirs={
            "scorer": "context_recall",
            "input": item["input"],
            "output": item["output"],
            "ground_truth": reference,
            "options": {"scale": scale, "context": context},
        },
        script={"kind": "context_recall", "items": claims, "verdicts": verdicts},
        rows=sorted(rows),
    )


# ------------------------------------------------------------------ noise sensitivity

_DIMENSIONS = [
    "content_accuracy",
    "completeness",
    "relevance",
    "consistency",
    "hallucination_resistance",
]


def _noise_sensitivity(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    fold = rng.random() < 0.08
    count = rng.choice([5, 5, 5, 5, 0, 1, 3, 4, 6])
    dimensions = [
        (_DIMENSIONS[i % 5], _folded(rng, rng.choice(IMPACT_LEVELS), rows, fold))
        for i in range(count)
    ]
    robustness = rng.choice(
        [
            round(rng.random(), 2),
            round(rng.random(), 2),
            round(rng.random(), 3),
            1,
            0,
            1.2,
            -0.1,
            0.85,
        ]
    )
    issues = [f"issue {i}" for i in range(rng.choice([0, 0, 0, 1, 1, 2, 3, 4]))]
    options: dict[str, Any] = {}
    scoring: dict[str, Any] = {}
    if rng.random() < 0.3:
        weights = {
            level: rng.choice([0, 0.1, 0.3, 0.5, 0.6, 0.85, 0.9, 1])
            for level in IMPACT_LEVELS
            if rng.random() < 0.5
        }
        options["impact_weights"] = scoring["impactWeights"] = weights
    if rng.random() < 0.25:
        threshold = rng.choice([0, 0.05, 0.1, 0.2, 0.3, 0.5, 1])
        options["discrepancy_threshold"] = scoring["discrepancyThreshold"] = threshold
    if rng.random() < 0.25:
        names = {
            "major_issue_per_item": "majorIssuePerItem",
            "max_major_issue_penalty": "maxMajorIssuePenalty",
        }
        penalties = {
            k: rng.choice([0, 0.05, 0.1, 0.2, 0.5]) for k in names if rng.random() < 0.7
        }
        options["penalties"] = penalties
        scoring["penalties"] = {names[k]: v for k, v in penalties.items()}
    question = _text(rng, flavour="plain", sentences=1)
    noise_type = None
    if rng.random() < 0.3:
        noise_type = rng.choice(["misinformation", "distractors", "typos"])
        options["noise_type"] = noise_type
    item = {
        "input": question,
        "output": _text(rng, flavour="plain"),
        "baseline_output": _text(rng, flavour="plain"),
    }
    theirs_options: dict[str, Any] = {
        "baselineResponse": item["baseline_output"],
        "noisyQuery": question + " By the way, the moon is made of cheese.",
        **({"noiseType": noise_type} if noise_type else {}),
        **({"scoring": scoring} if scoring else {}),
    }
    validate_options("noise_sensitivity", options)
    return Case(
        id=f"noise_sensitivity-{index:04d}",
        kind="noise_sensitivity",
        item=item,
        options=options,  # Mastra's has no scale: ours at scale 1
        theirs={
            "scorer": "noise_sensitivity",
            "input": question,
            "output": item["output"],
            "options": theirs_options,
        },
        script={
            "kind": "noise_sensitivity",
            "dimensions": dimensions,
            "robustness": robustness,
            "issues": issues,
        },
        rows=sorted(rows),
    )


# ------------------------------------------------------------------ prompt alignment

_RATINGS = [0, 0.1, 0.25, 0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1]


def _rating(rng: random.Random) -> float:
    return float(rng.choice(_RATINGS)) if rng.random() < 0.7 else round(rng.random(), 2)


def _prompt_alignment(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    mode = rng.choice(["both", "both", "user", "system", None])
    requirements = [rng.random() < 0.6 for _ in range(rng.choice([0, 1, 2, 3, 4, 5]))]
    share = sum(requirements) / len(requirements) if requirements else _rating(rng)
    requirements_score = share
    if requirements and rng.random() < 0.15:
        requirements_score = _rating(rng)  # the judge's number disagrees with its list
        if requirements_score != share:
            rows.add("prompt-alignment-requirements")
    ratings = {
        "intent": _rating(rng),
        "completeness": _rating(rng),
        "appropriateness": _rating(rng),
    }
    if rng.random() < 0.05:
        ratings[rng.choice(list(ratings))] = rng.choice([1.2, 1.5, -0.2])
        rows.add("prompt-alignment-score-range")
    scale = _scale(rng)
    options: dict[str, Any] = {"scale": scale}
    theirs: dict[str, Any] = {"scale": scale}
    if mode is not None:
        options["evaluation_mode"] = theirs["evaluationMode"] = mode
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
    }
    wanted = mode in ("system", "both") or rng.random() < 0.3
    # 1 in 10 go without: system mode then has nothing to judge, and both refuse.
    if wanted and rng.random() < 0.9:
        item["system_prompt"] = "You are a helpful assistant. " + _text(
            rng, flavour="plain", sentences=1
        )
    return Case(
        id=f"prompt_alignment-{index:04d}",
        kind="prompt_alignment",
        item=item,
        options=options,
        theirs={
            "scorer": "prompt_alignment",
            "input": item["input"],
            "output": item["output"],
            **(
                {"system_prompt": item["system_prompt"]}
                if "system_prompt" in item
                else {}
            ),
            "options": theirs,
        },
        script={
            "kind": "prompt_alignment",
            "requirements": requirements,
            "requirements_score": requirements_score,
            **ratings,
        },
        rows=sorted(rows),
    )


# ------------------------------------------------------------------ summarization


def _summarization(rng: random.Random, index: int) -> Case:
    claims = [rng.random() < 0.7 for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 6]))]
    questions = _sentences(rng, "question", rng.choice([0, 1, 2, 3, 5, 8, 10, 12, 15]))
    options: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    most = 10
    if rng.random() < 0.3:
        most = rng.choice([1, 2, 3, 5, 8, 20])
        options["max_questions"] = theirs["maxQuestions"] = most
    asked = min(len(questions), most)
    count = asked
    if asked and rng.random() < 0.1:  # one answer fewer or more
        count = max(0, asked + rng.choice([-1, 1]))
    coverage = [rng.random() < 0.6 for _ in range(count)]
    if rng.random() < 0.7:
        options["scale"] = theirs["scale"] = _scale(rng)
    item = {
        "input": "Source: " + _text(rng, flavour="plain", sentences=4),
        "output": _text(rng, flavour="plain"),
    }
    return Case(
        id=f"summarization-{index:04d}",
        kind="summarization",
        item=item,
        options=options,
        theirs={
            "scorer": "summarization",
            "input": item["input"],
            "output": item["output"],
            "options": theirs,
        },
        script={
            "kind": "summarization",
            "claims": claims,
            "questions": questions,
            "coverage": coverage,
        },
    )


_MAKERS: dict[str, Callable[[random.Random, int], Case]] = {
    "answer_similarity": _answer_similarity,
    "context_recall": _context_recall,
    "noise_sensitivity": _noise_sensitivity,
    "prompt_alignment": _prompt_alignment,
    "summarization": _summarization,
}


def make_case(kind: str, rng: random.Random, index: int) -> Case:
    return _MAKERS[kind](rng, index)


# ------------------------------------------------------------------ scripted answers


def _ours(script: dict[str, Any], step: str) -> dict[str, Any]:
    kind = script["kind"]
    if step == "reason":
        return {"reason": "scripted explanation"}
    if kind == "answer_similarity" and step == "units":
        return {
            "output_units": script["output_units"],
            "reference_units": script["reference_units"],
        }
    if kind == "answer_similarity" and step == "matches":
        units = script["reference_units"]
        outputs = script["output_units"] or [None]
        return {
            "matches": [
                {
                    "reference_unit": units[i] if i < len(units) else "",
                    "output_unit": outputs[i % len(outputs)],
                    "match": match,
                    "reason": _reason(i),
                }
                for i, match in enumerate(script["matches"])
            ],
            "extra_in_output": script["extra"],
            "contradictions": [
                {"output_unit": "o", "reference_unit": "r", "reason": _reason(i)}
                for i in range(script["contradictions"])
            ],
        }
    if kind == "context_recall" and step == "claims":
        return {"claims": script["items"]}
    if kind == "context_recall" and step == "verdicts":
        items = script["items"]
        return {
            "verdicts": [
                {
                    "claim": items[i] if i < len(items) else "",
                    "verdict": verdict,
                    "reason": _reason(i),
                }
                for i, verdict in enumerate(script["verdicts"])
            ]
        }
    if kind == "noise_sensitivity" and step == "impact":
        return {
            "dimensions": [
                {
                    "dimension": name,
                    "impact": impact,
                    "changes": "scripted",
                    "reason": _reason(i),
                }
                for i, (name, impact) in enumerate(script["dimensions"])
            ],
            "major_issues": script["issues"],
            "robustness_score": script["robustness"],
            "assessment": "scripted",
        }
    if kind == "prompt_alignment" and step == "alignment":
        return {
            "intent": {
                "score": script["intent"],
                "primary_intent": "scripted",
                "addressed": True,
                "reason": "scripted",
            },
            "requirements": [
                {"requirement": f"requirement {i}", "fulfilled": met, "reason": "r"}
                for i, met in enumerate(script["requirements"])
            ],
            "requirements_score": script["requirements_score"],
            "completeness": {
                "score": script["completeness"],
                "missing_elements": [],
                "reason": "scripted",
            },
            "appropriateness": {
                "score": script["appropriateness"],
                "format_aligned": True,
                "tone_aligned": True,
                "reason": "scripted",
            },
            "assessment": "scripted",
        }
    if kind == "summarization" and step == "alignment":
        return {
            "alignment": [
                {"claim": f"claim {i}", "supported": supported, "reason": _reason(i)}
                for i, supported in enumerate(script["claims"])
            ],
            "questions": script["questions"],
        }
    if kind == "summarization" and step == "coverage":
        questions = script["questions"]
        return {
            "coverage": [
                {
                    "question": questions[i] if i < len(questions) else "",
                    "answered": answered,
                    "reason": _reason(i),
                }
                for i, answered in enumerate(script["coverage"])
            ]
        }
    raise KeyError(f"{kind}: no scripted answer for our step {step!r}")


def _mastra(script: dict[str, Any], properties: set[str]) -> dict[str, Any] | str:
    kind = script["kind"]
    if not properties:
        return "Scripted explanation of the score."
    ours: dict[str, Any]
    if "groundTruthUnits" in properties:
        return {
            "outputUnits": script["output_units"],
            "groundTruthUnits": script["reference_units"],
        }
    if "matches" in properties:
        ours = _ours(script, "matches")
        return {
            "matches": [
                {
                    "groundTruthUnit": m["reference_unit"],
                    "outputUnit": m["output_unit"],
                    "matchType": m["match"],
                    "explanation": m["reason"],
                }
                for m in ours["matches"]
            ],
            "extraInOutput": ours["extra_in_output"],
            "contradictions": [
                {"outputUnit": "o", "groundTruthUnit": "r", "explanation": c["reason"]}
                for c in ours["contradictions"]
            ],
        }
    if properties == {"claims"}:
        return {"claims": script["items"]}
    if properties == {"verdicts"}:
        return {
            "verdicts": [
                {"verdict": verdict, "reason": _reason(i)}
                for i, verdict in enumerate(script["verdicts"])
            ]
        }
    if "robustnessScore" in properties:
        return {
            "dimensions": [
                {
                    "dimension": name,
                    "impactLevel": impact,
                    "specificChanges": "scripted",
                    "noiseInfluence": _reason(i),
                }
                for i, (name, impact) in enumerate(script["dimensions"])
            ],
            "overallAssessment": "scripted",
            "majorIssues": script["issues"],
            "robustnessScore": script["robustness"],
        }
    if "intentAlignment" in properties:
        return {
            "intentAlignment": {
                "score": script["intent"],
                "primaryIntent": "scripted",
                "isAddressed": True,
                "reasoning": "scripted",
            },
            "requirementsFulfillment": {
                "requirements": [
                    {
                        "requirement": f"requirement {i}",
                        "isFulfilled": met,
                        "reasoning": "r",
                    }
                    for i, met in enumerate(script["requirements"])
                ],
                "overallScore": script["requirements_score"],
            },
            "completeness": {
                "score": script["completeness"],
                "missingElements": [],
                "reasoning": "scripted",
            },
            "responseAppropriateness": {
                "score": script["appropriateness"],
                "formatAlignment": True,
                "toneAlignment": True,
                "reasoning": "scripted",
            },
            "overallAssessment": "scripted",
        }
    if "questions" in properties:
        return _ours(script, "alignment")
    if "coverage" in properties:
        return _ours(script, "coverage")
    raise KeyError(f"{kind}: no scripted answer for Mastra's step {properties}")


def answer(side: str, script: dict[str, Any], step: str, properties: set[str]) -> str:
    """The scripted reply text for one request of ``side`` (ours by step name, Mastra's
    by its schema's properties)."""
    if side == "ours":
        return json.dumps(_ours(script, step))
    reply = _mastra(script, properties)
    return reply if isinstance(reply, str) else json.dumps(reply)


# ------------------------------------------------------------------ rows


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _prompt_alignment_theirs(outcome: Outcome, *, ours: bool = False) -> float:
    """Mastra's number: the same weights on the judge's raw numbers, its requirements
    score the judge's own (not the share of fulfilled requirements), nothing checked.
    With ``ours``, the share instead: only that one rule switched back."""
    script = outcome.case.script or {}
    options = validate_options("prompt_alignment", outcome.case.options)
    met = script["requirements"]
    raw = {
        "intent": {"score": script["intent"]},
        "completeness": {"score": script["completeness"]},
        "appropriateness": {"score": script["appropriateness"]},
        "requirements": [],
    }
    requirements = (
        sum(met) / len(met) if ours and met else float(script["requirements_score"])
    )
    return score_prompt_alignment(raw, options, requirements=requirements)


def _requirements_row(outcome: Outcome, meta: dict[str, Any]) -> bool:
    if outcome.ours.error is not None or outcome.theirs.error is not None:
        return False
    return outcome.ours.score == _prompt_alignment_theirs(
        outcome, ours=True
    ) and _number(outcome.theirs.score) == _prompt_alignment_theirs(outcome)


def _score_range_row(outcome: Outcome, meta: dict[str, Any]) -> bool:
    if not (outcome.ours.error or "").startswith("JudgeError"):
        return False
    return _number(outcome.theirs.score) == _prompt_alignment_theirs(outcome)


def _blank_reference_row(outcome: Outcome, meta: dict[str, Any]) -> bool:
    """Context recall with a blank reference: Mastra scores 0, ours refuses the item."""
    return (outcome.ours.error or "").startswith("CaseError") and _number(
        outcome.theirs.score
    ) == 0


def _enum_folding_row(outcome: Outcome, meta: dict[str, Any]) -> bool:
    """A match type or impact level in capitals or with spaces: Mastra's schema
    enumerates the words, so its run fails; ours folds them and scores."""
    script = outcome.case.script or {}
    words = (
        script.get("matches")
        if outcome.case.kind == "answer_similarity"
        else [impact for _, impact in script.get("dimensions", [])]
    )
    vocabulary = MATCH_TYPES + IMPACT_LEVELS
    folded = any(word not in vocabulary for word in words or [])
    return folded and outcome.ours.error is None and outcome.theirs.error is not None


ROW_CHECKS: dict[str, dict[str, Callable[[Outcome, dict[str, Any]], bool]]] = {
    "prompt-alignment-requirements": {"prompt_alignment": _requirements_row},
    "prompt-alignment-score-range": {"prompt_alignment": _score_range_row},
    "blank-reference": {"context_recall": _blank_reference_row},
    "verdict-case-and-space": {
        "answer_similarity": _enum_folding_row,
        "noise_sensitivity": _enum_folding_row,
    },
}
