"""Generated cases for the differential suite: seeded, so every run checks the same ones.

A case is one item (input, output, context, reference), our options, the matching
arguments for the reference scorer (``theirs``, one line for conformance/node/runner.mjs),
the judge's scripted answers for LLM kinds, and the rows of the "Where our
numbers differ" tables (docs/scoring/differences.md) it may reproduce (``rows``). A case without rows must give the
same number on both sides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from scoring.options import validate_options
from scoring.textkinds import NEGATORS

__all__ = ["KINDS_COMPARED", "NON_BOOLEAN_FLAGS", "Case", "generate"]


@dataclass
class Case:
    id: str
    kind: str
    item: dict[str, Any]
    options: dict[str, Any]
    theirs: dict[str, Any]
    script: dict[str, Any] | None = None
    rows: list[str] = field(default_factory=list)

    def runner_line(self) -> dict[str, Any]:
        return {"id": self.id, **self.theirs}


# ----------------------------------------------------------------------------- words

_PLAIN = [
    "the",
    "river",
    "city",
    "market",
    "report",
    "team",
    "budget",
    "school",
    "garden",
    "project",
    "engine",
    "window",
    "doctor",
    "patient",
    "summer",
    "winter",
    "coffee",
    "museum",
    "bridge",
    "village",
    "history",
    "science",
    "answer",
    "question",
    "result",
    "table",
    "system",
    "computer",
    "information",
    "network",
    "language",
    "student",
    "teacher",
    "company",
    "product",
    "customer",
    "service",
    "weather",
    "forest",
    "mountain",
    "ocean",
    "planet",
    "energy",
    "policy",
]
_VERBS = [
    "run",
    "running",
    "ran",
    "walks",
    "walked",
    "studies",
    "studied",
    "make",
    "made",
    "building",
    "built",
    "writes",
    "wrote",
    "written",
    "agreed",
    "stopped",
    "sees",
    "saw",
    "is",
    "are",
    "was",
    "were",
    "has",
    "had",
    "do",
    "does",
    "did",
    "go",
    "went",
    "gone",
    "shows",
    "shown",
]
_SENTIMENT = [
    "good",
    "great",
    "love",
    "happy",
    "excellent",
    "wonderful",
    "bad",
    "terrible",
    "hate",
    "sad",
    "awful",
    "poor",
    "nice",
    "best",
    "worst",
    "fine",
    "like",
    "dislike",
    "angry",
    "calm",
    "amazing",
    "boring",
]
_STOP = [
    "a",
    "an",
    "of",
    "and",
    "to",
    "in",
    "on",
    "for",
    "with",
    "is",
    "it",
    "this",
    "that",
    "be",
    "by",
    "as",
    "at",
    "from",
    "or",
    "but",
]
_ODD = [
    "well-known",
    "state-of-the-art",
    "e.g.",
    "and/or",
    "C++",
    "naïve",
    "café",
    "résumé",
    "Zürich",
    "'quoted'",
    '"said"',
    "(aside)",
    "x_y",
    "#tag",
    "@user",
    "&",
    "3.14",
    "42",
    "2024",
    "1st",
    "100%",
    "https://example.com/A?b=1",
    "<b>bold</b>",
    "it's",
    "can't",
    "won't",
    "didn't",
    "cannot",
    "never",
    "non",
]
_SENTIMENT_NEGATORS = ("not", "don't", "can't", "won't", "isn't", "doesn't")
_OUR_EXTRA_NEGATORS = tuple(
    sorted(n for n in NEGATORS if "'" in n and n not in _SENTIMENT_NEGATORS)
)
_CURLY = ["don’t", "isn’t", "it’s", "can’t", "‘quoted’", "“said”"]
_ASTRAL = ["😀", "👍", "🎉", "😡", "𝔘𝔫𝔦", "🙂"]
_SPACES = ["  ", "\t", "\n", "\u00a0", "\u2003", "\ufeff", "\x1c", "\x85", " \n "]
# Words whose lower case is not ASCII's: Turkish dotted and dotless i, sharp s, Greek
# sigma (final form), ligatures, titlecase digraphs, Kelvin/Ohm/Angstrom signs, Cherokee,
# Georgian capitals, and letters newer than Python's Unicode database (Unicode 16 and 17:
# Cyrillic Tje, Latin ram's horn and lambda, Garay, Beria Erfe), also next to a sigma.
_CASED = [
    "İstanbul",
    "ISTANBUL",
    "ıstanbul",
    "DİYARBAKIR",
    "diyarbakır",
    "I\u0307s",
    "straße",
    "STRASSE",
    "GROẞ",
    "ΣΑΣ",
    "σας",
    "ΟΔΥΣΣΕΥΣ",
    "Οδυσσεύς",
    "ΑΣ.",
    "ΑΣ'Α",
    "ﬁle",
    "FILE",
    "ﬂow",
    "ǅemal",
    "ǄEMAL",
    "\u212a",  # Kelvin sign
    "\u2126",  # Ohm sign
    "\u212b",  # Angstrom sign
    "ᏣᎳᎩ",
    "ᲥᲐᲠᲗᲣᲚᲘ",
    "ΐ",
    "ᾼ",
    "Ⓐⓑ",
    "\u1c89\u1c8a",
    "\ua7cbX",
    "\ua7dcA",
    "\U00010d50\U00010d51",
    "\U00016ea0\U00016ebb",
    "ΑΣ\U00010d50",
    "\U00010d50Σ",
    "Σ\u0301\ua7da",
]
_ENDS = [".", ".", ".", "!", "?", "...", ""]


def _sentence(rng: random.Random, pools: list[list[str]], n: int) -> str:
    words = [rng.choice(rng.choice(pools)) for _ in range(n)]
    if rng.random() < 0.5:
        words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice(_ENDS)


def _text(rng: random.Random, *, flavour: str, sentences: int | None = None) -> str:
    pools = [_PLAIN, _VERBS, _SENTIMENT, _STOP]
    if flavour == "cased":
        pools += [_CASED, _CASED]
    if flavour in ("odd", "wild"):
        pools.append(_ODD)
    if flavour == "wild":
        pools += [_CURLY, _ASTRAL, list(_OUR_EXTRA_NEGATORS), list(_SENTIMENT_NEGATORS)]
    count = sentences if sentences is not None else rng.randint(1, 4)
    text = " ".join(_sentence(rng, pools, rng.randint(1, 12)) for _ in range(count))
    if flavour == "wild" and rng.random() < 0.5:
        words = text.split(" ")
        at = rng.randrange(len(words))
        words[at] = words[at] + rng.choice(_SPACES)
        text = " ".join(words)
    if rng.random() < 0.05:
        text = text.upper()
    return text


def _variant(rng: random.Random, text: str) -> str:
    """A text near ``text``: words dropped, swapped, replaced, re-cased."""
    words = text.split(" ")
    out: list[str] = []
    for word in words:
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.2:
            out.append(rng.choice(_PLAIN + _VERBS + _SENTIMENT))
        elif roll < 0.25:
            out.append(word.upper())
        else:
            out.append(word)
        if rng.random() < 0.05:
            out.append(rng.choice(_STOP))
    if len(out) > 3 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


_SCALES = [1, 1, 1, 1, 10, 10, 5, 100, 7, 3, 0.5, 2.5, 4.2, 20]


def _scale(rng: random.Random) -> float:
    return rng.choice(_SCALES)


# ------------------------------------------------------------------------ verdicts

_FOLDED = {
    # U+FEFF is whitespace to JavaScript's trim(), not to str.strip()
    "yes": ["YES", "Yes", " yes", "yes ", "yes\n", " Yes ", "yes\ufeff", "\u00a0YES"],
    "no": ["NO", "No", " no", "no "],
    "unsure": ["UNSURE", "Unsure", " unsure"],
}


def _verdicts(rng: random.Random, kind: str, n: int, rows: set[str]) -> list[Any]:
    vocab = (
        ["yes", "no", "unsure"]
        if kind in ("faithfulness", "answer_relevancy")
        else ["yes", "no"]
    )
    fold = rng.random() < 0.15
    odd = rng.random() < 0.08
    out: list[Any] = []
    for _ in range(n):
        verdict = rng.choice(vocab)
        if fold and rng.random() < 0.5:
            verdict = rng.choice(_FOLDED[verdict])
            rows.add("verdict-case-and-space")
        out.append(verdict)
    if odd and out:
        # "yes\x85": U+0085 is not whitespace to JavaScript; full-width letters do not
        # fold to ASCII; a JSON boolean, number or null is not a verdict word at all
        extra: list[Any] = [
            "maybe",
            "partially",
            "n/a",
            "",
            "true",
            "yes\x85",
            "ＹＥＳ",
        ]
        extra += [True, None, 1]
        if kind not in ("faithfulness", "answer_relevancy"):
            extra += ["unsure", "unsure", "Unsure"]
        out[rng.randrange(len(out))] = rng.choice(extra)
        rows.add("verdict-off-vocabulary")
    return out


def _items(rng: random.Random, n: int, what: str) -> list[str]:
    return [f"{what} {i}: " + _sentence(rng, [_PLAIN, _VERBS], 5) for i in range(n)]


def _claim_kind(rng: random.Random, kind: str, index: int) -> Case:
    rows: set[str] = set()
    n = rng.choice([0, 1, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 12])
    items = _items(
        rng, n, {"answer_relevancy": "statement", "bias": "opinion"}.get(kind, "claim")
    )
    # Judges usually return one verdict per item; sometimes one fewer or more.
    count = n
    if n and rng.random() < 0.1:
        count = max(1, n + rng.choice([-1, 1]))
    verdicts = _verdicts(rng, kind, count, rows)
    scale = _scale(rng)
    options: dict[str, Any] = {"scale": scale}
    theirs_options: dict[str, Any] | None = {"scale": scale}
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
    }
    if kind in ("faithfulness", "hallucination"):
        item["context"] = [
            _text(rng, flavour="plain", sentences=1) for _ in range(rng.randint(1, 4))
        ]
        assert theirs_options is not None
        theirs_options["context"] = item["context"]
    if kind == "answer_relevancy":
        weight = rng.choice([0.3, 0.3, 0.5, 0.25, 0.1, 0.7, 0.35, 0.0, 1.0, 0.15])
        options["uncertainty_weight"] = weight
        theirs_options = {"uncertaintyWeight": weight, "scale": scale}
        roll = rng.random()
        # The options the user set, nothing more: Mastra replaces its defaults with them.
        if roll < 0.06:
            options = {"scale": scale}
            theirs_options = {"scale": scale}
            rows.add("answer-relevancy-partial-options")
        elif roll < 0.09:
            options = {"uncertainty_weight": weight}
            theirs_options = {"uncertaintyWeight": weight}
            rows.add("answer-relevancy-partial-options")
        elif roll < 0.12:
            options = {}
            theirs_options = None  # Mastra's own defaults
    script = {"kind": kind, "items": items, "verdicts": verdicts}
    return Case(
        id=f"{kind}-{index:04d}",
        kind=kind,
        item=item,
        options=options,
        theirs={
            "scorer": kind,
            "input": item["input"],
            "output": item["output"],
            "options": theirs_options,
        },
        script=script,
        rows=sorted(rows),
    )


def _toxicity(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    n = rng.choice([0, 0, 1, 2, 3, 4, 5, 6, 8, 10])
    if n == 0:
        rows.add("toxicity-no-verdicts")
    verdicts = _verdicts(rng, "toxicity", n, rows)
    scale = _scale(rng)
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
    }
    return Case(
        id=f"toxicity-{index:04d}",
        kind="toxicity",
        item=item,
        options={"scale": scale},
        theirs={
            "scorer": "toxicity",
            "input": item["input"],
            "output": item["output"],
            "options": {"scale": scale},
        },
        script={"kind": "toxicity", "items": [], "verdicts": verdicts},
        rows=sorted(rows),
    )


_RELEVANCE = ["high", "medium", "low", "none"]
# What judges write where a JSON boolean is asked for (the reference's schemas refuse
# them, and so does ours: the step is asked again, then an error result).
NON_BOOLEAN_FLAGS: list[Any] = ["yes", "Yes", "no", 1, 0, "true", "false", None, "1"]


def _context_relevance(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    chunks = rng.randint(0, 8) if rng.random() < 0.06 else rng.randint(1, 8)
    context = [_text(rng, flavour="plain", sentences=1) for _ in range(chunks)]
    if not context:
        chunks = 0
    n = chunks
    if chunks and rng.random() < 0.08:
        n = 0
        rows.add("context-relevance-no-evaluations")
    fold = rng.random() < 0.1
    evaluations = []
    for i in range(n):
        relevance = rng.choice(_RELEVANCE)
        if fold and rng.random() < 0.5:
            relevance = rng.choice(
                [relevance.upper(), relevance.capitalize(), f" {relevance}"]
            )
            rows.add("verdict-case-and-space")
        evaluations.append(
            {"context_index": i, "relevance": relevance, "used": rng.random() < 0.6}
        )
    if evaluations and rng.random() < 0.06:
        # A flag that is not a JSON boolean: both refuse the reply.
        rng.choice(evaluations)["used"] = rng.choice(NON_BOOLEAN_FLAGS)
    rng.shuffle(evaluations)
    missing = [
        f"missing fact {i}" for i in range(rng.choice([0, 0, 0, 1, 1, 2, 3, 4, 5]))
    ]
    scale = _scale(rng)
    options: dict[str, Any] = {"scale": scale}
    theirs_options: dict[str, Any] = {"scale": scale}
    if rng.random() < 0.35:
        penalties = {
            "unused_high_relevance": rng.choice([0, 0.05, 0.1, 0.2, 0.25]),
            "missing_context_per_item": rng.choice([0, 0.1, 0.15, 0.3]),
            "max_missing_context_penalty": rng.choice([0, 0.2, 0.4, 0.5, 1]),
        }
        keys = [k for k in penalties if rng.random() < 0.7] or ["unused_high_relevance"]
        options["penalties"] = {k: penalties[k] for k in keys}
        names = {
            "unused_high_relevance": "unusedHighRelevanceContext",
            "missing_context_per_item": "missingContextPerItem",
            "max_missing_context_penalty": "maxMissingContextPenalty",
        }
        theirs_options["penalties"] = {names[k]: penalties[k] for k in keys}
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
        "context": context,
    }
    theirs: dict[str, Any] = {
        "scorer": "context_relevance",
        "input": item["input"],
        "output": item["output"],
    }
    if context:
        theirs_options["context"] = context
    else:
        theirs["no_context"] = True
    theirs["options"] = theirs_options
    return Case(
        id=f"context_relevance-{index:04d}",
        kind="context_relevance",
        item=item,
        options=options,
        theirs=theirs,
        script={
            "kind": "context_relevance",
            "evaluations": evaluations,
            "missing": missing,
        },
        rows=sorted(rows),
    )


def _context_precision(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    chunks = rng.randint(1, 10)
    context = [_text(rng, flavour="plain", sentences=1) for _ in range(chunks)]
    indexes = list(range(chunks))
    if rng.random() < 0.4:
        rng.shuffle(indexes)  # the judge may answer out of order
    if rng.random() < 0.15:
        indexes = indexes[: rng.randint(0, chunks)]  # or skip some chunks
    verdicts = _verdicts(rng, "context_precision", len(indexes), rows)
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
        "context": context,
    }
    if rng.random() < 0.15:
        item["reference"] = "Reference answer: " + _text(
            rng, flavour="plain", sentences=1
        )
        rows.add("context-precision-reference")
    scale = _scale(rng)
    return Case(
        id=f"context_precision-{index:04d}",
        kind="context_precision",
        item=item,
        options={"scale": scale},
        theirs={
            "scorer": "context_precision",
            "input": item["input"],
            "output": item["output"],
            "options": {"scale": scale, "context": context},
        },
        script={
            "kind": "context_precision",
            "verdicts": list(zip(indexes, verdicts, strict=True)),
        },
        rows=sorted(rows),
    )


# ---------------------------------------------------------------------- factuality

_REPLY_REASON = "The submitted answer covers the expert answer."


def _factuality_reply(rng: random.Random, rows: set[str]) -> str:
    letter = rng.choice("ABCDE")
    form = rng.choices(
        [
            "json",
            "json-lower",
            "json-fenced",
            "json-after-prose",
            "paren",
            "paren-after-space",
            "letter-paren",
            "lone",
            "lone-dot",
            "lone-lower",
            "prose-paren",
            "see-above",
            "bad-letter",
            "json-bad-category",
            "json-no-category",
            "prose",
            "json-then-text",
            "json-no-category-then-paren",
            "lead-then-paren",
            "lead-then-see-above",
            "paren-then-answer",
            "letter-paren-then-paren",
        ],
        weights=[30, 6, 6, 6, 8, 3, 5, 4, 3, 2, 3, 2, 2, 2, 2, 2, 4, 2, 4, 2, 3, 2],
    )[0]
    reason = _REPLY_REASON
    other = rng.choice([c for c in "ABCDE" if c != letter])
    # A leading letter and, later, another letter before a parenthesis.
    if form == "json-then-text":  # both read the opening object
        return (
            f'{{"category": "{letter}", "reason": "{reason}"}}\n'
            f"The reasoning is that it is not ({other})."
        )
    if form == "json-no-category-then-paren":
        rows.add("factuality-unparseable")
        return f'{{"reason": "{reason}"}}\nAnswer: ({letter})'
    if form == "lead-then-paren":
        rows.add("factuality-mixed-letters")
        text = rng.choice([letter, letter.lower()])
        sep = rng.choice([". ", ": ", " ", ", "])
        return f"{text}{sep}{reason} It is not ({other}) because details differ."
    if form == "lead-then-see-above":
        rows.add("factuality-mixed-letters")
        return f"{letter}. {reason} (see above)"
    if form == "paren-then-answer":  # both read the parenthesised letter
        return f"({letter}) {reason} answer: {other}"
    if form == "letter-paren-then-paren":
        return f"{letter}) {reason} Not ({other})."
    if form == "json":
        return f'{{"category": "{letter}", "reason": "{reason}"}}'
    if form == "json-lower":
        return f'{{"reason": "{reason}", "category": " {letter.lower()} "}}'
    if form == "json-fenced":
        return f'```json\n{{"category": "{letter}", "reason": "{reason}"}}\n```'
    if form == "json-after-prose":
        return f'Here is my verdict:\n{{"category": "{letter}", "reason": "{reason}"}}'
    if form == "paren":
        return f"({letter}) {reason}"
    if form == "paren-after-space":
        return f"  ({letter})\n{reason}"
    if form == "letter-paren":
        return f"{rng.choice([letter, letter.lower()])}) {reason}"
    if form in ("lone", "lone-dot", "lone-lower"):
        rows.add("factuality-lone-letter")
        text = letter.lower() if form == "lone-lower" else letter
        suffix = {"lone": "", "lone-dot": ". " + reason, "lone-lower": ": " + reason}[
            form
        ]
        return text + suffix
    rows.add("factuality-unparseable")
    if form == "prose-paren":
        return f"After comparing both, the answer is ({letter}). {reason}"
    if form == "see-above":
        return "The details are discussed elsewhere (see above)."
    if form == "bad-letter":
        return f"({rng.choice('FGXZ')}) {reason}"
    if form == "json-bad-category":
        return f'{{"category": "{rng.choice(["(A)", "F", "AB", "1"])}", "reason": "{reason}"}}'
    if form == "json-no-category":
        return f'{{"reason": "{reason}"}}'
    return "I cannot decide between the options here."


def _factuality(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    reply = _factuality_reply(rng, rows)
    options: dict[str, Any] = {}
    theirs_options: dict[str, Any] = {}
    if rng.random() < 0.4:
        names = {
            "subset": "subset",
            "superset": "superset",
            "agree": "agree",
            "disagree": "disagree",
            "differ_but_factual": "differButFactual",
        }
        scores = {
            k: rng.choice([1, 1, 0, 0.5, 0.25, 2, -1, 0.75])
            for k in names
            if rng.random() < 0.5
        }
        options["category_scores"] = scores
        theirs_options = {names[k]: v for k, v in scores.items()}
        if any(not 0 <= v <= 1 for v in scores.values()):
            rows.add("factuality-category-score-range")  # promptfoo takes any number
    reference = "Expert answer: " + _text(rng, flavour="plain", sentences=1)
    if rng.random() < 0.04:
        reference = rng.choice(["", "   "])
        rows.add("blank-reference")
    item = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain"),
        "reference": reference,
    }
    return Case(
        id=f"factuality-{index:04d}",
        kind="factuality",
        item=item,
        options=options,
        theirs={
            "scorer": "factuality",
            "input": item["input"],
            "output": item["output"],
            "reference": reference,
            "options": theirs_options,
        },
        script={"kind": "factuality", "reply": reply},
        rows=sorted(rows),
    )


# ------------------------------------------------------------------ no-judge kinds


def _text_case(rng: random.Random, kind: str, index: int) -> Case:
    rows: set[str] = set()
    flavour = rng.choices(["plain", "odd", "wild", "cased"], weights=[3, 3, 2, 2])[0]
    base = _text(rng, flavour=flavour)
    roll = rng.random()
    if roll < 0.08:
        output = base
    elif roll < 0.6:
        output = _variant(rng, base)
    else:
        output = _text(rng, flavour=flavour)
    item: dict[str, Any] = {"input": base, "output": output}
    compared = base
    their_input = base
    if kind != "tone_consistency":
        roll = rng.random()
        if roll < 0.12:
            # A reference: ours compares with it, Mastra with the input.
            item["reference"] = base
            item["input"] = _text(rng, flavour="plain", sentences=1)
            their_input = item["input"]
            rows.add("text-compared-with-reference")
        elif roll < 0.16:
            item["input"] = rng.choice(["", "  "])
            item["reference"] = rng.choice([None, "", " "])
            compared = their_input = item["input"]
            rows.add("blank-reference")
            if rng.random() < 0.5:
                item["output"] = output = rng.choice(["", "  ", output])
    if not output.strip():
        rows.add("blank-reference")  # a blank output: ours refuses it too
    options: dict[str, Any] = {}
    theirs_options: dict[str, Any] | None = None
    if kind == "content_similarity":
        ignore_case = rng.random() < 0.8
        if not ignore_case or rng.random() < 0.3:
            options["ignore_case"] = ignore_case
        theirs_options = {"ignoreCase": ignore_case, "ignoreWhitespace": True}
    if kind == "tone_consistency":
        theirs_options = {}
        roll = rng.random()
        if roll < 0.45:
            tone = _text(rng, flavour=flavour, sentences=rng.randint(1, 2))
            options["reference_tone"] = tone
            theirs_options = {"referenceTone": tone}
        elif roll < 0.52:
            options["reference_tone"] = rng.choice(["", "  "])
            theirs_options = {"referenceTone": options["reference_tone"]}
    if rng.random() < 0.15:
        options["scale"] = rng.choice([10, 5, 100])
    texts = [output, compared, str(options.get("reference_tone") or "")]
    joined = "".join(texts)
    if kind in ("content_similarity", "textual_difference") and any(
        ord(ch) > 0xFFFF for ch in joined
    ):
        rows.add("utf16-lengths")
    if kind == "keyword_coverage":
        rows.add("keyword-stopwords")
    if kind == "completeness":
        rows.add("completeness-extraction")
    if kind == "tone_consistency":
        rows.add("tone-lexicon")
        if any(ch in joined for ch in "‘’ʼ"):
            rows.add("tone-curly-apostrophes")
    if kind != "tone_consistency" and "reference" in item and item["reference"] is None:
        del item["reference"]
    validate_options(kind, options)
    return Case(
        id=f"{kind}-{index:04d}",
        kind=kind,
        item=item,
        options=options,
        theirs={
            "scorer": kind,
            "input": their_input,
            "output": output,
            "options": theirs_options,
        },
        rows=sorted(rows),
    )


# ------------------------------------------------------------------- agent kinds

_TOOLS = ["search", "fetch", "summarize", "weather", "calculator", "translate"]


def _tool_case(rng: random.Random, index: int) -> Case:
    pool = _TOOLS[: rng.randint(2, len(_TOOLS))]
    names = [rng.choice(pool) for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5]))]
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain", sentences=1),
        "tool_calls": [
            {"name": name, "arguments": {"q": i}, "result": f"result {i}"}
            for i, name in enumerate(names)
        ],
    }
    options: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    strict = rng.random() < 0.3
    if strict or rng.random() < 0.2:
        options["strict_mode"] = strict
    theirs["strictMode"] = strict
    roll = rng.random()
    if roll < 0.45:
        tool = rng.choice(names) if names and rng.random() < 0.6 else rng.choice(pool)
        options["expected_tool"] = tool
        theirs["expectedTool"] = tool
    else:
        if names and rng.random() < 0.5:  # a subsequence of what was called
            order = [n for n in names if rng.random() < 0.6] or names[:1]
        else:
            order = [rng.choice(pool) for _ in range(rng.randint(1, 3))]
        theirs["expectedToolOrder"] = order
        if roll < 0.8:
            options["expected_tool_order"] = order
            if rng.random() < 0.2:  # both given: the order wins
                options["expected_tool"] = theirs["expectedTool"] = rng.choice(pool)
        else:  # expected from the item (Mastra: the same list as an option)
            item["expected_tool_calls"] = [{"name": n} for n in order]
    if rng.random() < 0.15:
        options["scale"] = rng.choice([10, 5, 100])
    validate_options("tool_call_accuracy", options)
    return Case(
        id=f"tool_call_accuracy-{index:04d}",
        kind="tool_call_accuracy",
        item=item,
        options=options,
        theirs={
            "scorer": "tool_call_accuracy",
            "input": item["input"],
            "output": item["output"],
            "tool_calls": names,
            "options": theirs,
        },
    )


def _trajectory_case(rng: random.Random, index: int) -> Case:
    rows: set[str] = set()
    pool = _TOOLS[: rng.randint(2, len(_TOOLS))]
    names = [rng.choice(pool) for _ in range(rng.choice([0, 1, 2, 2, 3, 3, 4, 5, 6]))]
    calls: list[dict[str, Any]] = [
        {"name": name, "arguments": {"q": f"query {i}", "limit": i}, "result": f"r{i}"}
        for i, name in enumerate(names)
    ]
    item: dict[str, Any] = {
        "input": _text(rng, flavour="plain", sentences=1),
        "output": _text(rng, flavour="plain", sentences=1),
        "tool_calls": calls,
    }
    ordering = rng.choice(["relaxed", "relaxed", "strict", "unordered"])
    allow_repeated = rng.random() < 0.7
    options: dict[str, Any] = {
        "ordering": ordering,
        "allow_repeated_steps": allow_repeated,
    }
    if calls and rng.random() < 0.6:  # expected: mostly what was called, perturbed
        expected_calls = [dict(c) for c in calls if rng.random() < 0.8]
        if rng.random() < 0.3:
            rng.shuffle(expected_calls)
    else:
        expected_calls = [
            {"name": rng.choice(pool)} for _ in range(rng.choice([0, 1, 2, 3, 4]))
        ]
    expected: list[dict[str, Any]] = []
    for call in expected_calls:
        step: dict[str, Any] = {"name": call["name"]}
        if "arguments" in call and rng.random() < 0.6:
            arguments: dict[str, Any] = dict(call["arguments"])
            roll = rng.random()
            if roll < 0.15:
                arguments["limit"] += 1  # a different argument: no match
            elif roll < 0.3:  # the same arguments, keys in another order
                arguments = {"limit": arguments["limit"], "q": arguments["q"]}
                rows.add("trajectory-json-key-order")
            step["arguments"] = arguments
        if "result" in call and rng.random() < 0.3:
            step["result"] = call["result"]
        expected.append(step)
    if expected and rng.random() < 0.35:  # names only, from the options
        options["expected_tool_order"] = [s["name"] for s in expected]
        expected = [{"name": s["name"]} for s in expected]
        rows.discard("trajectory-json-key-order")
    else:
        item["expected_tool_calls"] = expected
    if rng.random() < 0.15:
        options["scale"] = rng.choice([10, 5, 100])
    validate_options("trajectory_accuracy", options)

    def their_step(step: dict[str, Any], typed: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": step["name"]}
        if typed:
            out["stepType"] = "tool_call"
        if "arguments" in step:
            out["toolArgs"] = step["arguments"]
        if "result" in step:
            out["toolResult"] = step["result"]
        return out

    return Case(
        id=f"trajectory_accuracy-{index:04d}",
        kind="trajectory_accuracy",
        item=item,
        options=options,
        theirs={
            "scorer": "trajectory_accuracy",
            "input": item["input"],
            "output": item["output"],
            "steps": [their_step(c, True) for c in calls],
            # Typed, so that Mastra compares the arguments and results given.
            "expected": [their_step(s, bool(len(s) > 1)) for s in expected],
            "options": {"ordering": ordering, "allowRepeatedSteps": allow_repeated},
        },
        rows=sorted(rows),
    )


# ------------------------------------------------------------------------- public

KINDS_COMPARED: dict[str, int] = {
    # kind: number of cases (Mastra's LLM scorers cost the most CPU per case)
    "faithfulness": 200,
    "hallucination": 200,
    "context_relevance": 200,
    "context_precision": 200,
    "answer_relevancy": 200,
    "bias": 200,
    "toxicity": 200,
    "factuality": 300,
    "content_similarity": 300,
    "textual_difference": 300,
    "keyword_coverage": 300,
    "completeness": 300,
    "tone_consistency": 400,
    "tool_call_accuracy": 300,
    "trajectory_accuracy": 300,
    # the agent kinds: conformance/kinds_agent.py makes their cases
    "rubric": 150,
    "multi_turn_judge": 100,
    "tool_call_accuracy_llm": 150,
    "trajectory_accuracy_llm": 150,
    "trajectory": 400,
    # scoring.kinds_rag's kinds: conformance/kinds_rag.py makes their cases
    "answer_similarity": 150,
    "context_recall": 150,
    "noise_sensitivity": 150,
    "prompt_alignment": 150,
    "summarization": 150,
}


# A judge's JSON reply with text around it ("<json>" is the reply): both sides read the
# object that opens at the first "{" and ignore the rest.
JSON_WRAPS = [
    "<json>\nThe reasoning is that each verdict follows from the texts.",
    "<json>\n\nNote: {see above}",
    "```json\n<json>\n```\nThat is all.",
    "Here is the JSON you asked for:\n<json>",
    "<json>\n<json>",
    "<json> ```",
]


def _break_a_flag(rng: random.Random, script: dict[str, Any]) -> None:
    """Make one of the judge's yes/no flags in ``script`` a non-boolean
    (``NON_BOOLEAN_FLAGS``) in the kinds whose steps have flags (context relevance's own
    maker does it for ``used``)."""
    flag = rng.choice(NON_BOOLEAN_FLAGS)
    kind = script["kind"]
    lists = {
        "prompt_alignment": ["requirements"],
        "summarization": ["claims", "coverage"],
        "rubric": ["verdicts"],
    }.get(kind, [])
    lists = [name for name in lists if script[name]]
    if lists:
        values = script[rng.choice(lists)]
        values[rng.randrange(len(values))] = flag
    elif kind == "multi_turn_judge":
        script["satisfied"] = flag
    elif kind in ("tool_call_accuracy_llm", "trajectory_accuracy_llm"):
        name = "evaluations" if kind == "tool_call_accuracy_llm" else "steps"
        if script[name]:
            at = rng.randrange(len(script[name]))
            entry = list(script[name][at])
            entry[1] = flag  # appropriate; necessary
            script[name][at] = entry


_FLAGGED = (
    "prompt_alignment",
    "summarization",
    "rubric",
    "multi_turn_judge",
    "tool_call_accuracy_llm",
    "trajectory_accuracy_llm",
)


def generate(seed: int = 18, scale: float = 1.0) -> list[Case]:
    """All cases, in a fixed order; ``scale`` multiplies every kind's count."""
    from conformance import (  # they build on this module's helpers
        kinds_agent,
        kinds_rag,
    )

    rng = random.Random(seed)
    cases: list[Case] = []
    for kind, count in KINDS_COMPARED.items():
        for index in range(max(1, round(count * scale))):
            if kind in ("faithfulness", "hallucination", "answer_relevancy", "bias"):
                cases.append(_claim_kind(rng, kind, index))
            elif kind == "toxicity":
                cases.append(_toxicity(rng, index))
            elif kind == "context_relevance":
                cases.append(_context_relevance(rng, index))
            elif kind == "context_precision":
                cases.append(_context_precision(rng, index))
            elif kind == "factuality":
                cases.append(_factuality(rng, index))
            elif kind == "tool_call_accuracy":
                cases.append(_tool_case(rng, index))
            elif kind == "trajectory_accuracy":
                cases.append(_trajectory_case(rng, index))
            elif kind in kinds_agent.AGENT_KINDS:
                cases.append(kinds_agent.make_case(kind, rng, index))
            elif kind in kinds_rag.RAG_KINDS:
                cases.append(kinds_rag.make_case(kind, rng, index))
            else:
                cases.append(_text_case(rng, kind, index))
            script = cases[-1].script
            if script is not None and rng.random() < 0.06:
                script["wrap"] = rng.choice(JSON_WRAPS)
            if kind in _FLAGGED and script is not None and rng.random() < 0.06:
                _break_a_flag(rng, script)
    return cases
