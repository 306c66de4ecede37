"""The non-LLM kinds: analyses computed from the texts alone (no judge).

``analyze_text(kind, case, options)`` returns ``{"ratio": r, ...details}`` with
the unscaled ratio in [0, 1]; ``compute_score`` scales it (not rounded).

Choices (see the README, "Where our numbers differ"):
- keyword_coverage uses the English list of the ``stop-words`` package
  (``stop_words.get_stop_words("english")``, 1,333 words in version 2025.11.4);
- completeness approximates compromise's nouns/verbs/terms with a simple
  tokeniser, accent stripping and a light rule-based verb lemmatiser;
- tone_consistency uses AFINN-165 (``AFINN-en-165.txt`` shipped by the
  ``afinn`` package), single-word entries, with the negators of the JS
  ``sentiment`` package plus the other common n't contractions.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from typing import Any

from rapidfuzz.distance import Indel
from stop_words import get_stop_words  # type: ignore[import-untyped]

from scoring.errors import CaseError
from scoring.options import check_kind, validate_options
from scoring.types import Case

__all__ = [
    "NEGATORS",
    "analyze_text",
    "completeness_elements",
    "keywords",
    "lemma",
    "sentiment_comparative",
    "stopwords",
]

# --------------------------------------------------------------------------- case


def _text_field(case: Case, name: str, *, required: bool) -> str | None:
    value = case.get(name)
    if value is None:
        if required:
            raise CaseError(f"the item has no {name}", field=name)
        return None
    if not isinstance(value, str):
        raise CaseError(
            f"the item's {name} must be text, got {type(value).__name__}", field=name
        )
    return value


def _reference_text(case: Case) -> tuple[str, str]:
    """The text to compare the output with: the reference, else the input."""
    reference = _text_field(case, "reference", required=False)
    if reference is not None and reference.strip():
        return reference, "reference"
    text = _text_field(case, "input", required=False)
    if text is not None and text.strip():
        return text, "input"
    raise CaseError(
        "the item needs a reference (or at least an input) to compare with",
        field="reference",
    )


# ------------------------------------------------------------ content_similarity

_WHITESPACE = re.compile(r"\s+")


def _content_similarity(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    a = _WHITESPACE.sub("", output)
    b = _WHITESPACE.sub("", reference)
    if options["ignore_case"]:
        a, b = a.lower(), b.lower()
    details: dict[str, Any] = {"compared_with": source}
    if a == b:
        return {"ratio": 1.0, **details, "common_bigrams": max(len(a) - 1, 0)}
    if len(a) < 2 or len(b) < 2:
        return {"ratio": 0.0, **details, "common_bigrams": 0}
    bigrams_a = Counter(a[i : i + 2] for i in range(len(a) - 1))
    bigrams_b = Counter(b[i : i + 2] for i in range(len(b) - 1))
    common = sum((bigrams_a & bigrams_b).values())
    ratio = 2 * common / (len(a) + len(b) - 2)
    return {
        "ratio": ratio,
        **details,
        "common_bigrams": common,
        "output_bigrams": len(a) - 1,
        "reference_bigrams": len(b) - 1,
    }


# ------------------------------------------------------------ textual_difference


def _textual_difference(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    if output == reference:
        ratio = 1.0
    elif not output or not reference:
        ratio = 0.0
    else:
        # Indel normalized similarity = 2 x LCS / (len(a) + len(b)).
        ratio = Indel.normalized_similarity(output, reference)
    changes = Indel.distance(output, reference)
    return {
        "ratio": ratio,
        "compared_with": source,
        "lcs_length": (len(output) + len(reference) - changes) // 2,
        "changes": changes,
    }


# -------------------------------------------------------------- keyword_coverage

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


@functools.cache
def stopwords() -> frozenset[str]:
    """The English stopwords of the ``stop-words`` package."""
    return frozenset(word.translate(_APOSTROPHES) for word in get_stop_words("english"))


def keywords(text: str) -> list[str]:
    """Lower-cased words minus stopwords, punctuation and pure numbers, unique, in order."""
    stop = stopwords()
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower().translate(_APOSTROPHES)):
        if word in stop or word.isdigit():
            continue
        seen.setdefault(word, None)
    return list(seen)


def _keyword_coverage(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    wanted = keywords(reference)
    present = set(keywords(output))
    matched = [word for word in wanted if word in present]
    missing = [word for word in wanted if word not in present]
    ratio = len(matched) / len(wanted) if wanted else 1.0
    return {
        "ratio": ratio,
        "compared_with": source,
        "total_keywords": len(wanted),
        "matched_keywords": len(matched),
        "matched": matched,
        "missing": missing,
    }


# ------------------------------------------------------------------ completeness

_NON_ALNUM = re.compile(r"[\W_]+")

_IRREGULAR: dict[str, str] = {}
for _base, _forms in {
    "be": "am is are was were been being",
    "have": "has had having",
    "do": "does did done doing",
    "go": "goes went gone",
    "make": "made",
    "say": "said",
    "take": "took taken",
    "get": "got gotten",
    "come": "came",
    "see": "saw seen",
    "know": "knew known",
    "give": "gave given",
    "find": "found",
    "think": "thought",
    "tell": "told",
    "become": "became",
    "leave": "left",
    "feel": "felt",
    "bring": "brought",
    "begin": "began begun",
    "keep": "kept",
    "hold": "held",
    "write": "wrote written writing",
    "stand": "stood",
    "hear": "heard",
    "mean": "meant",
    "meet": "met",
    "run": "ran",
    "pay": "paid",
    "sit": "sat",
    "speak": "spoke spoken",
    "lead": "led",
    "grow": "grew grown",
    "lose": "lost",
    "fall": "fell fallen",
    "send": "sent",
    "build": "built",
    "understand": "understood",
    "win": "won",
    "eat": "ate eaten",
    "drive": "drove driven",
    "choose": "chose chosen",
    "buy": "bought",
    "teach": "taught",
    "catch": "caught",
    "fight": "fought",
    "sell": "sold",
    "spend": "spent",
    "show": "shown",
    "rise": "rose risen",
    "fly": "flew flown",
    "draw": "drew drawn",
    "break": "broke broken",
    "wear": "wore worn",
}.items():
    for _form in _forms.split():
        _IRREGULAR[_form] = _base

_VOWELS = frozenset("aeiou")
_NO_UNDOUBLE = frozenset("lsz")


def _restore_e(stem: str) -> str:
    """Add back the e that -ing/-ed dropped in short consonant-vowel-consonant stems (mak -> make)."""
    if (
        2 <= len(stem) <= 4
        and stem[-1] not in _VOWELS
        and stem[-1] not in "wxy"
        and stem[-2] in _VOWELS
        and (len(stem) == 2 or stem[-3] not in _VOWELS)
        and stem[-2:] not in {"en", "er", "on", "el", "it", "et", "al", "ol", "ar"}
    ):
        return stem + "e"
    return stem


def _strip_suffix(word: str, suffix: str) -> str | None:
    stem = word[: -len(suffix)]
    if len(stem) < 2 or not any(ch in _VOWELS or ch == "y" for ch in stem):
        return None
    if (
        len(stem) >= 3
        and stem[-1] == stem[-2]
        and stem[-1] not in _VOWELS | _NO_UNDOUBLE
    ):
        return stem[:-1]  # running -> run, stopped -> stop
    return _restore_e(stem)


def lemma(word: str) -> str:
    """A light, rule-based base form (verbs mostly): 'running' -> 'run', 'studies' -> 'study'.

    Stands in for compromise's ``verbs().toInfinitive()``; see the README, "Where our numbers differ".
    """
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 4:
        return _strip_suffix(word, "ing") or word
    if word.endswith("eed"):
        return word[:-1]  # agreed -> agree
    if word.endswith("ed") and len(word) > 3:
        return _strip_suffix(word, "ed") or word
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _normalize(text: str) -> str:
    """Lower-case and strip accents (NFD, combining marks removed)."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def completeness_elements(text: str) -> list[str]:
    """Words of ``text`` (lower-cased, accents stripped) plus their base forms, unique, in order."""
    seen: dict[str, None] = {}
    for word in _NON_ALNUM.split(_normalize(text).translate(_APOSTROPHES)):
        if not word:
            continue
        seen.setdefault(word, None)
        seen.setdefault(lemma(word), None)
    return list(seen)


def _covered(element: str, candidates: list[str], exact: set[str]) -> bool:
    if element in exact:
        return True
    if len(element) <= 3:
        return False
    for other in candidates:
        longer, shorter = (
            (element, other) if len(element) > len(other) else (other, element)
        )
        if shorter in longer and len(shorter) / len(longer) > 0.6:
            return True
    return False


def _completeness(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    wanted = completeness_elements(reference)
    found = completeness_elements(output)
    if not wanted:
        ratio = 1.0 if not found else 0.0
        return {
            "ratio": ratio,
            "compared_with": source,
            "total_elements": 0,
            "missing": [],
        }
    exact = set(found)
    missing = [element for element in wanted if not _covered(element, found, exact)]
    return {
        "ratio": (len(wanted) - len(missing)) / len(wanted),
        "compared_with": source,
        "total_elements": len(wanted),
        "covered_elements": len(wanted) - len(missing),
        "missing": missing,
    }


# -------------------------------------------------------------- tone_consistency

# The negators of the JS ``sentiment`` package (AFINN-based, used by Mastra),
# plus the other common n't contractions; a negator directly before a word
# flips that word's score.
NEGATORS: frozenset[str] = frozenset(
    {
        "not",
        "non",
        "cant",
        "can't",
        "cannot",
        "dont",
        "don't",
        "doesnt",
        "doesn't",
        "didnt",
        "didn't",
        "isnt",
        "isn't",
        "wasnt",
        "wasn't",
        "arent",
        "aren't",
        "werent",
        "weren't",
        "wont",
        "won't",
        "wouldnt",
        "wouldn't",
        "shouldnt",
        "shouldn't",
        "couldnt",
        "couldn't",
        "havent",
        "haven't",
        "hasnt",
        "hasn't",
        "hadnt",
        "hadn't",
        "aint",
        "ain't",
    }
)

_SENTIMENT_PUNCTUATION = re.compile(r"[.,/#!?$%^&*;:{}=_`\"~()]")
_SENTENCE = re.compile(r"[^.!?]+[.!?]+")


@functools.cache
def _afinn() -> dict[str, int]:
    """AFINN-165 single-word entries from the ``afinn`` package's data file."""
    path = importlib.resources.files("afinn") / "data" / "AFINN-en-165.txt"
    lexicon: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word, _, value = line.rpartition("\t")
        if word and " " not in word:
            lexicon[word] = int(value)
    return lexicon


def sentiment_comparative(text: str) -> float:
    """AFINN-165 sum / number of tokens, negators flipping the next word (like JS ``sentiment``)."""
    cleaned = _SENTIMENT_PUNCTUATION.sub(" ", text.lower().translate(_APOSTROPHES))
    tokens = cleaned.split() or [""]
    lexicon = _afinn()
    total = 0
    for index, token in enumerate(tokens):
        value = lexicon.get(token, 0)
        if value and index > 0 and tokens[index - 1] in NEGATORS:
            value = -value
        total += value
    return total / len(tokens)


def _tone_consistency(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference_tone = options.get("reference_tone")
    if reference_tone is not None:
        response = sentiment_comparative(output)
        reference = sentiment_comparative(reference_tone)
        difference = abs(response - reference)
        return {
            "ratio": max(0.0, 1 - difference),
            "mode": "reference_tone",
            "output_sentiment": response,
            "reference_sentiment": reference,
            "difference": difference,
        }
    sentences = _SENTENCE.findall(output) or [output]
    values = [sentiment_comparative(sentence) for sentence in sentences]
    mean = sum(values) / len(values)
    variance = sum((value - mean) ** 2 for value in values) / len(values)
    return {
        "ratio": max(0.0, 1 - variance),
        "mode": "stability",
        "sentence_sentiments": values,
        "mean_sentiment": mean,
        "variance": variance,
    }


# ------------------------------------------------------------------------ public

_ANALYZERS: dict[str, Callable[[Case, dict[str, Any]], dict[str, Any]]] = {
    "content_similarity": _content_similarity,
    "textual_difference": _textual_difference,
    "keyword_coverage": _keyword_coverage,
    "completeness": _completeness,
    "tone_consistency": _tone_consistency,
}


def analyze_text(
    kind: str, case: Case, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Compute the analysis of a non-LLM kind from the case's texts.

    Returns ``{"ratio": <0..1>, ...details}``. Raises ``UnknownKindError``,
    ``OptionsError``, ``CaseError`` (missing output; no reference nor input to
    compare with) or ``ValueError`` for an LLM kind (those need ``judge_case``).
    """
    check_kind(kind)
    if kind not in _ANALYZERS:
        raise ValueError(f"{kind} needs a judge; use judge_case, not analyze_text")
    merged = validate_options(kind, options)
    if not isinstance(case, dict):
        raise CaseError("the item must be a mapping of fields", field="")
    return _ANALYZERS[kind](case, merged)
