"""The non-LLM kinds: analyses computed from the texts alone (no judge).

``analyze_text(kind, case, options)`` returns ``{"ratio": r, ...details}`` with
the unscaled ratio in [0, 1]; ``compute_score`` scales it (not rounded).

Choices (see the README, "Where our numbers differ"):
- keyword_coverage splits words as keyword-extractor does, but removes the English list
  of the ``stop-words`` package (``stop_words.get_stop_words("english")``, 1,333 words in
  version 2025.11.4);
- completeness approximates compromise's nouns/verbs/terms with a simple
  tokeniser, accent stripping and a light rule-based verb lemmatiser;
- tone_consistency tokenises as the JS ``sentiment`` package does and uses AFINN-165
  (``AFINN-en-165.txt`` shipped by the ``afinn`` package), single-word entries, with
  sentiment's negators plus the other common n't contractions, curly apostrophes read
  as straight ones.

Whitespace is JavaScript's (``JS_WHITESPACE``), not Python's: the reference
scorers are JavaScript, and the two sets differ (U+FEFF is whitespace only in JS, U+001C
to U+001F and U+0085 only in Python).
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
from scoring.jstext import JS_WHITESPACE, js_lower
from scoring.options import check_kind, validate_options
from scoring.toolcalls import tool_call_accuracy, trajectory_accuracy
from scoring.trajectory import trajectory
from scoring.types import Case

__all__ = [
    "JS_WHITESPACE",
    "NEGATORS",
    "analyze_text",
    "completeness_elements",
    "coverage",
    "dice_ratio",
    "keywords",
    "lcs_ratio",
    "lemma",
    "sentiment_comparative",
    "stopwords",
    "tone_ratio",
]

_JS_SPACE = f"[{JS_WHITESPACE}]"
_JS_SPACES = re.compile(f"{_JS_SPACE}+")
_JS_TRIM = re.compile(f"^{_JS_SPACE}+|{_JS_SPACE}+$")


def _js_trim(text: str) -> str:
    return _JS_TRIM.sub("", text)


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


def dice_ratio(a: str, b: str, *, ignore_case: bool = True) -> tuple[float, int]:
    """Sørensen-Dice on character bigrams (a multiset), whitespace removed: ``(ratio,
    common bigrams)``. Equal texts give 1; a text shorter than 2 characters gives 0."""
    if ignore_case:  # before the spaces go, as Mastra does: "ΣΑΣ like" ends in ς
        a, b = js_lower(a), js_lower(b)
    a = _JS_SPACES.sub("", a)
    b = _JS_SPACES.sub("", b)
    if a == b:
        return 1.0, max(len(a) - 1, 0)
    if len(a) < 2 or len(b) < 2:
        return 0.0, 0
    bigrams_a = Counter(a[i : i + 2] for i in range(len(a) - 1))
    bigrams_b = Counter(b[i : i + 2] for i in range(len(b) - 1))
    common = sum((bigrams_a & bigrams_b).values())
    return 2 * common / (len(a) + len(b) - 2), common


def _content_similarity(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    ratio, common = dice_ratio(output, reference, ignore_case=options["ignore_case"])
    return {"ratio": ratio, "compared_with": source, "common_bigrams": common}


# ------------------------------------------------------------ textual_difference


def lcs_ratio(a: str, b: str) -> tuple[float, int]:
    """``(2 x LCS / (len(a) + len(b)), LCS length)``; equal -> 1, one empty -> 0.

    The division is the reference's (``2 * lcs / total``), so the last digits agree;
    rapidfuzz's Indel distance gives the LCS length fast.
    """
    lcs = (len(a) + len(b) - Indel.distance(a, b)) // 2
    if a == b:
        return 1.0, lcs
    if not a or not b:
        return 0.0, 0
    return 2 * lcs / (len(a) + len(b)), lcs


def _textual_difference(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    ratio, lcs = lcs_ratio(output, reference)
    return {
        "ratio": ratio,
        "compared_with": source,
        "lcs_length": lcs,
        "changes": len(output) + len(reference) - 2 * lcs,
    }


# -------------------------------------------------------------- keyword_coverage

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_HTML_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
# keyword-extractor strips these from each word: . , ; ! ? ( ) : " and curly quotes
# anywhere, a straight apostrophe only at either end.
_WORD_PUNCTUATION = re.compile(r"[.,;!?():\"\u201c\u201d\u2018\u2019]|^'|'$")
_LONE_SYMBOL = re.compile(r"[_@&#]")
_ASCII_DIGITS = re.compile(r"[0-9]+")


@functools.cache
def stopwords() -> frozenset[str]:
    """The English stopwords of the ``stop-words`` package."""
    return frozenset(word.translate(_APOSTROPHES) for word in get_stop_words("english"))


def keywords(text: str, stop: frozenset[str] | None = None) -> list[str]:
    """The text's keywords, unique, in order, split as keyword-extractor splits them.

    HTML tags are removed; words are runs between whitespace characters; a word holding
    ``http://`` or ``https://`` is kept as it is, others lose ``. , ; ! ? ( ) : "`` and
    curly quotes, and a straight apostrophe at either end; a lone ``_ @ & #`` and
    words of ASCII digits only are dropped; words are lower-cased (URLs keep their case)
    and stopwords (``stop``, by default ``stopwords()``) removed.
    """
    stop = stopwords() if stop is None else stop
    seen: dict[str, None] = {}
    for raw in re.split(_JS_SPACE, _js_trim(_HTML_TAG.sub("", text))):
        url = _URL.search(raw) is not None
        word = raw if url else _WORD_PUNCTUATION.sub("", raw)
        if len(word) == 1:
            word = _LONE_SYMBOL.sub("", word)
        if _ASCII_DIGITS.fullmatch(word):
            continue
        folded = js_lower(word)
        if not word or folded in stop:
            continue
        seen.setdefault(word if url else folded, None)
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
    return js_lower("".join(ch for ch in decomposed if not unicodedata.combining(ch)))


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


def coverage(wanted: list[str], found: list[str]) -> tuple[float, list[str]]:
    """Share of ``wanted`` covered by ``found`` (exactly, or for words longer than 3
    letters by containment above 60 %), and the missing elements. Nothing wanted: 1 if
    nothing was found either, else 0 (Mastra's rule)."""
    if not wanted:
        return (1.0 if not found else 0.0), []
    exact = set(found)
    missing = [element for element in wanted if not _covered(element, found, exact)]
    return (len(wanted) - len(missing)) / len(wanted), missing


def _completeness(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    reference, source = _reference_text(case)
    wanted = completeness_elements(reference)
    found = completeness_elements(output)
    ratio, missing = coverage(wanted, found)
    if not wanted:
        return {
            "ratio": ratio,
            "compared_with": source,
            "total_elements": 0,
            "missing": [],
        }
    return {
        "ratio": ratio,
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
_SENTIMENT_SPACES = re.compile(f"{_JS_SPACE}{{2,}}")
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


def _sentiment_tokens(text: str, fold_apostrophes: bool) -> list[str]:
    """The JS ``sentiment`` package's tokens: lower-cased, newlines and punctuation made
    spaces, runs of two or more whitespace characters made one space, trimmed, then
    split on single spaces (so a lone tab does not separate words)."""
    if fold_apostrophes:
        text = text.translate(_APOSTROPHES)
    cleaned = _SENTIMENT_PUNCTUATION.sub(" ", js_lower(text).replace("\n", " "))
    return _js_trim(_SENTIMENT_SPACES.sub(" ", cleaned)).split(" ")


def sentiment_comparative(
    text: str,
    *,
    lexicon: dict[str, int] | None = None,
    negators: frozenset[str] | None = None,
    fold_apostrophes: bool = True,
) -> float:
    """Lexicon score sum / number of tokens, a negator directly before a word flipping its
    score (like JS ``sentiment``). By default AFINN-165, ``NEGATORS`` and curly
    apostrophes read as straight ones; the keywords let the conformance suite swap in
    the reference's own lexicon and negators."""
    tokens = _sentiment_tokens(text, fold_apostrophes)
    lexicon = _afinn() if lexicon is None else lexicon
    negators = NEGATORS if negators is None else negators
    total = 0
    for index, token in enumerate(tokens):
        value = lexicon.get(token, 0)
        if value and index > 0 and tokens[index - 1] in negators:
            value = -value
        total += value
    return total / len(tokens)


def tone_ratio(
    output: str, reference_tone: str | None, **sentiment: Any
) -> dict[str, Any]:
    """The tone analysis: with a non-empty ``reference_tone``, 1 - |difference of the
    comparatives| (at least 0); otherwise 1 - the population variance of the output's
    sentence comparatives (at least 0). Sums run left to right, as in the reference."""
    if reference_tone:
        response = sentiment_comparative(output, **sentiment)
        reference = sentiment_comparative(reference_tone, **sentiment)
        difference = abs(response - reference)
        return {
            "ratio": max(0.0, 1 - difference),
            "mode": "reference_tone",
            "output_sentiment": response,
            "reference_sentiment": reference,
            "difference": difference,
        }
    sentences = _SENTENCE.findall(output) or [output]
    values = [sentiment_comparative(sentence, **sentiment) for sentence in sentences]
    total = 0.0
    for value in values:
        total += value
    mean = total / len(values)
    squares = 0.0
    for value in values:
        squares += (value - mean) * (value - mean)
    variance = squares / len(values)
    return {
        "ratio": max(0.0, 1 - variance),
        "mode": "stability",
        "sentence_sentiments": values,
        "mean_sentiment": mean,
        "variance": variance,
    }


def _tone_consistency(case: Case, options: dict[str, Any]) -> dict[str, Any]:
    output = _text_field(case, "output", required=True) or ""
    # An empty reference tone means none (Mastra: `if (referenceTone)`).
    return tone_ratio(output, options.get("reference_tone") or None)


# ------------------------------------------------------------------------ public

_ANALYZERS: dict[str, Callable[[Case, dict[str, Any]], dict[str, Any]]] = {
    "content_similarity": _content_similarity,
    "textual_difference": _textual_difference,
    "keyword_coverage": _keyword_coverage,
    "completeness": _completeness,
    "tone_consistency": _tone_consistency,
    "tool_call_accuracy": tool_call_accuracy,
    "trajectory_accuracy": trajectory_accuracy,
    "trajectory": trajectory,
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
