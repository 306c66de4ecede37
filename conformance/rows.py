"""The documented differences: one entry per row of the "Where our numbers differ"
tables (docs/scoring/differences.md), each able to tell whether it explains a case's
difference.

A row explains a difference only by reproducing the reference's number from our own
pieces with that one documented rule switched to theirs (their stopword list, their
verdict comparison, their element lists...), never by accepting any number. Rows about
what the judge is shown rather than about the number (``shows``) are checked on the
recorded prompts.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.kinds_agent import AGENT_KINDS
from conformance.kinds_agent import explain as agent_explain
from conformance.kinds_rag import ROW_CHECKS as RAG_ROW_CHECKS
from conformance.run import Outcome
from scoring import (
    ScoringError,
    compute_score,
    parse_factuality_reply,
    round_half_up,
    validate_options,
)
from scoring.jstext import js_lower, js_strip
from scoring.textkinds import (
    completeness_elements,
    coverage,
    dice_ratio,
    keywords,
    lcs_ratio,
    tone_ratio,
)
from scoring.toolcalls import (
    _steps,
    compare_steps,
    tool_call_accuracy,
    trajectory_accuracy,
)
from scoring.trajectory import trajectory


def _same_json_text(a: Any, b: Any) -> bool:
    """Mastra's comparison: ``JSON.stringify(a) === JSON.stringify(b)``."""
    return json.dumps(a, separators=(",", ":"), ensure_ascii=False) == json.dumps(
        b, separators=(",", ":"), ensure_ascii=False
    )


__all__ = [
    "DIFFERENCES",
    "ROWS",
    "TEXT_SWITCHES",
    "Explanation",
    "Row",
    "explain",
    "documented_row_ids",
    "same_number",
    "text_ratio",
]

DIFFERENCES = (
    Path(__file__).resolve().parent.parent / "docs" / "scoring" / "differences.md"
)
_TITLE = "Where our numbers differ from Mastra's and promptfoo's"


@dataclass(frozen=True)
class Row:
    id: str
    explains: Callable[[Outcome, dict[str, Any]], bool] | None = None
    shows: Callable[[Outcome, dict[str, Any]], bool] | None = None


@dataclass
class Explanation:
    rows: list[str]  # the rows that explain the difference (empty: undocumented)
    note: str = ""


# ------------------------------------------------------------------ comparisons


def _number(value: float | str | None) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return math.nan if value == "NaN" else None
    return float(value)


def _scale(outcome: Outcome) -> float:
    return float(validate_options(outcome.case.kind, outcome.case.options)["scale"])


def theirs_on_our_scale(outcome: Outcome) -> float | None:
    """Their number where ours would be: the scorers without a judge and promptfoo's
    factuality have no scale option, so theirs x our scale."""
    value = _number(outcome.theirs.score)
    if value is None:
        return None
    if outcome.case.kind == "factuality" or not outcome.case.script:
        return value * _scale(outcome)
    return value


def same_number(outcome: Outcome) -> bool:
    ours, theirs = outcome.ours, outcome.theirs
    if ours.error is not None or theirs.error is not None:
        return ours.error is not None and theirs.error is not None
    value = theirs_on_our_scale(outcome)
    if value is None or ours.score != value:
        return False
    if outcome.case.kind == "factuality":
        return ours.passed == theirs.passed
    return True


def _equal(ours: float | None, theirs: float | None) -> bool:
    return ours is not None and theirs is not None and ours == theirs


# ------------------------------------------------------ how Mastra reads verdicts


def _mastra_reads(kind: str, raw: Any) -> str:
    """The verdict Mastra 1.10.2's score function counts for a raw judge string
    (JavaScript's trim() and toLowerCase())."""
    if not isinstance(raw, str):
        return "no"  # its schema refuses the reply before any verdict is counted
    if kind in ("faithfulness", "hallucination"):
        return "yes" if raw == "yes" else "no"  # compared exactly
    if kind == "bias":
        return "yes" if js_lower(raw) == "yes" else "no"  # lower-cased, not trimmed
    folded = js_lower(js_strip(raw))
    if kind == "answer_relevancy" and folded == "unsure":
        return "unsure"
    return "yes" if folded == "yes" else "no"


def _their_analysis(outcome: Outcome) -> dict[str, Any]:
    script = outcome.case.script or {}
    kind = outcome.case.kind
    if kind == "context_recall":  # Mastra divides by the claims, not the verdicts
        return {
            "claims": list(script["items"]),
            "verdicts": [
                {"verdict": _mastra_reads(kind, raw)} for raw in script["verdicts"]
            ],
        }
    if kind == "context_precision":
        return {
            "verdicts": [
                {"context_index": index, "verdict": _mastra_reads(kind, raw)}
                for index, raw in script["verdicts"]
            ]
        }
    return {
        "verdicts": [
            {"verdict": _mastra_reads(kind, raw)} for raw in script["verdicts"]
        ]
    }


def _their_count(outcome: Outcome) -> float | None:
    return compute_score(
        outcome.case.kind, _their_analysis(outcome), outcome.case.options
    )


def _verdict_folding(outcome: Outcome, meta: dict[str, Any]) -> bool:
    script = outcome.case.script or {}
    if outcome.case.kind == "context_relevance":
        # Mastra's schema enumerates the levels: "High" fails the run.
        folded = any(
            e["relevance"] not in ("high", "medium", "low", "none")
            for e in script["evaluations"]
        )
        return (
            folded and outcome.ours.error is None and outcome.theirs.error is not None
        )
    if outcome.ours.error is not None or outcome.theirs.error is not None:
        return False
    return _equal(_their_count(outcome), _number(outcome.theirs.score))


def _off_vocabulary(outcome: Outcome, meta: dict[str, Any]) -> bool:
    error = outcome.ours.error or ""
    if not error.startswith("JudgeError") or outcome.theirs.error is not None:
        return False
    return _equal(_their_count(outcome), _number(outcome.theirs.score))


def _toxicity_no_verdicts(outcome: Outcome, meta: dict[str, Any]) -> bool:
    script = outcome.case.script or {}
    return (
        not script.get("verdicts")
        and _number(outcome.theirs.score) == 1
        and outcome.ours.score == 0
    )


def _no_evaluations(outcome: Outcome, meta: dict[str, Any]) -> bool:
    script = outcome.case.script or {}
    if script.get("evaluations") or not outcome.case.item.get("context"):
        return False
    unscaled = 0.0 if script.get("missing") else 1.0
    return _number(
        outcome.theirs.score
    ) == unscaled and outcome.ours.score == round_half_up(unscaled * _scale(outcome))


def _partial_options(outcome: Outcome, meta: dict[str, Any]) -> bool:
    value = _number(outcome.theirs.score)
    return value is not None and math.isnan(value) and outcome.ours.error is None


def _precision_reference(outcome: Outcome, meta: dict[str, Any]) -> bool:
    reference = outcome.case.item.get("reference") or ""
    prompts = outcome.judge.prompts.get(outcome.case.id, {})
    ours = "\n".join(prompts.get("ours", []))
    theirs = "\n".join(prompts.get("mastra", []))
    return bool(reference) and reference in ours and reference not in theirs


# ----------------------------------------------------------------- factuality

_LEGACY = re.compile(r"\s*\(?([a-eA-E])\)")
_CATEGORY_KEYS = {
    "A": "subset",
    "B": "superset",
    "C": "agree",
    "D": "disagree",
    "E": "differ_but_factual",
}


def _promptfoo_letter(reply: str) -> str | None:
    """The letter promptfoo 0.123.1 takes from a reply our parser refuses: a JSON
    object's category when it is one letter A-E (else the reply fails), otherwise the
    first letter a-e followed by ')' anywhere."""
    if "{" in reply and '"category"' in reply:
        return None  # a category other than A-E: promptfoo fails the reply
    match = _LEGACY.search(reply)
    return match.group(1).upper() if match else None


def _category_score(outcome: Outcome, letter: str) -> float:
    options = validate_options("factuality", outcome.case.options)
    return float(options["category_scores"][_CATEGORY_KEYS[letter]])


def _promptfoo_expected(outcome: Outcome) -> tuple[float, bool]:
    letter = _promptfoo_letter(str((outcome.case.script or {}).get("reply", "")))
    if letter is None:
        return 0.0, False
    score = _category_score(outcome, letter)
    return score, score > 0


def _factuality_unparseable(outcome: Outcome, meta: dict[str, Any]) -> bool:
    if not (outcome.ours.error or "").startswith("JudgeError"):
        return False
    score, passed = _promptfoo_expected(outcome)
    return _number(outcome.theirs.score) == score and outcome.theirs.passed == passed


def _their_category_scores(outcome: Outcome) -> dict[str, float]:
    """promptfoo's table: our defaults with the case's category scores as given (it
    takes any number; ours keeps them within 0-1 so that scores stay within 0-scale)."""
    scores: dict[str, float] = dict(validate_options("factuality")["category_scores"])
    scores.update((outcome.case.options or {}).get("category_scores") or {})
    return scores


def _score_range_rows(outcome: Outcome) -> list[str]:
    """The rows explaining a case whose category scores are outside 0-1: ours refuses
    the options; theirs is reproduced from promptfoo's table (``_their_category_scores``)
    and the letter our parser reads, or, for a reply it refuses or a lone letter, the
    letter promptfoo reads (with that row too). Empty when nothing reproduces it."""
    error = outcome.ours.error or ""
    if not error.startswith("OptionsError") or "category_scores" not in error:
        return []
    if outcome.theirs.error is not None:
        return []
    rows = outcome.case.rows
    reply = str((outcome.case.script or {}).get("reply", ""))
    table = _their_category_scores(outcome)
    candidates: list[tuple[list[str], str | None]] = []
    try:
        letter = parse_factuality_reply(reply)["category"]
    except ScoringError:
        if "factuality-unparseable" in rows:
            candidates.append((["factuality-unparseable"], _promptfoo_letter(reply)))
    else:
        candidates.append(([], letter))
        if "factuality-lone-letter" in rows:
            candidates.append((["factuality-lone-letter"], None))
        if "factuality-mixed-letters" in rows:
            candidates.append((["factuality-mixed-letters"], _promptfoo_letter(reply)))
    for also, their_letter in candidates:
        score = table[_CATEGORY_KEYS[their_letter]] if their_letter else 0.0
        passed = their_letter is not None and score > 0
        if _number(outcome.theirs.score) == score and outcome.theirs.passed == passed:
            return ["factuality-category-score-range", *also]
    return []


def _mixed_letters(outcome: Outcome, meta: dict[str, Any]) -> bool:
    """A reply that opens with a lone letter and later has a letter before ``)``
    ("A. ... not (B)", "B. ... (see above)"): ours reads the leading letter, promptfoo
    its pattern's first match (``_promptfoo_letter``)."""
    if outcome.ours.error is not None:
        return False
    reply = str((outcome.case.script or {}).get("reply", ""))
    ours = parse_factuality_reply(reply)["category"]
    theirs = _promptfoo_letter(reply)
    if (
        theirs is None
        or theirs == ours
        or outcome.ours.score != _category_score(outcome, ours)
    ):
        return False
    score = _category_score(outcome, theirs)
    return _number(outcome.theirs.score) == score and outcome.theirs.passed == (
        score > 0
    )


def _lone_letter(outcome: Outcome, meta: dict[str, Any]) -> bool:
    reply = str((outcome.case.script or {}).get("reply", "")).strip()
    letter = reply[:1].upper()
    if letter not in _CATEGORY_KEYS or outcome.ours.error is not None:
        return False
    return (
        outcome.ours.score == _category_score(outcome, letter)
        and _number(outcome.theirs.score) == 0
        and outcome.theirs.passed is False
    )


# ------------------------------------------------------------- scorers without a judge


def _utf16(text: str) -> str:
    """``text`` as JavaScript sees it: one character per UTF-16 code unit."""
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(
        chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2)
    )


def _compared_text(item: dict[str, Any]) -> str:
    for name in ("reference", "input"):
        value = item.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def text_ratio(
    outcome: Outcome, switches: frozenset[str], meta: dict[str, Any]
) -> float:
    """Our ratio for a case without a judge, with the documented rules in ``switches``
    turned to the reference's. No switches: exactly what ``scoring`` computes."""
    case = outcome.case
    options = validate_options(case.kind, case.options)
    output = str(case.item.get("output") or "")
    if switches & {"text-compared-with-reference", "blank-reference"}:
        compared = str(case.theirs["input"])
    else:
        compared = _compared_text(case.item)
    if "utf16-lengths" in switches:
        if case.kind == "content_similarity" and options["ignore_case"]:
            # JavaScript lower-cases whole characters (a Garay capital is one
            # surrogate pair), then counts code units
            output, compared = js_lower(output), js_lower(compared)
        output, compared = _utf16(output), _utf16(compared)
    if case.kind == "content_similarity":
        return dice_ratio(output, compared, ignore_case=options["ignore_case"])[0]
    if case.kind == "textual_difference":
        return lcs_ratio(output, compared)[0]
    if case.kind == "keyword_coverage":
        stop = (
            frozenset(meta["keyword_stopwords"])
            if "keyword-stopwords" in switches
            else None
        )
        wanted = keywords(compared, stop)
        present = set(keywords(output, stop))
        return sum(1 for w in wanted if w in present) / len(wanted) if wanted else 1.0
    if case.kind == "completeness":
        if "completeness-extraction" in switches:
            pre = outcome.theirs.details.get("preprocess") or {}
            return coverage(
                list(pre.get("inputElements") or []),
                list(pre.get("outputElements") or []),
            )[0]
        return coverage(completeness_elements(compared), completeness_elements(output))[
            0
        ]
    if case.kind == "tool_call_accuracy":
        return float(tool_call_accuracy(case.item, options)["ratio"])
    if case.kind == "trajectory_accuracy":
        if "trajectory-json-key-order" not in switches:
            return float(trajectory_accuracy(case.item, options)["ratio"])
        analysis = trajectory_accuracy(case.item, options)
        actual = _steps(case.item, "tool_calls") or []
        expected = _steps(case.item, "expected_tool_calls") or []
        return float(
            compare_steps(
                actual,
                expected,
                analysis["ordering"],
                options["allow_repeated_steps"],
                same=_same_json_text,
            )["ratio"]
        )
    if case.kind == "trajectory":  # conformance/kinds_agent.py explains its rows
        return float(trajectory(case.item, options)["ratio"])
    if case.kind == "tone_consistency":
        sentiment: dict[str, Any] = {}
        if "tone-lexicon" in switches:
            sentiment["lexicon"] = meta["sentiment_labels"]
            sentiment["negators"] = frozenset(meta["sentiment_negators"])
        if "tone-curly-apostrophes" in switches:
            sentiment["fold_apostrophes"] = False
        return float(
            tone_ratio(output, options.get("reference_tone") or None, **sentiment)[
                "ratio"
            ]
        )
    raise KeyError(case.kind)


TEXT_SWITCHES = frozenset(
    {
        "trajectory-json-key-order",
        "text-compared-with-reference",
        "blank-reference",
        "utf16-lengths",
        "keyword-stopwords",
        "completeness-extraction",
        "tone-lexicon",
        "tone-curly-apostrophes",
    }
)


def _explain_text(outcome: Outcome, meta: dict[str, Any]) -> Explanation:
    case = outcome.case
    theirs = _number(outcome.theirs.score)
    if theirs is None:
        return Explanation([], f"theirs failed: {outcome.theirs.error}")
    if outcome.ours.error is None:
        mirror = text_ratio(outcome, frozenset(), meta) * _scale(outcome)
        if mirror != outcome.ours.score:
            return Explanation(
                [],
                f"the suite's mirror of ours gives {mirror}, not {outcome.ours.score}",
            )
    elif "blank-reference" not in case.rows:
        return Explanation([], f"ours failed: {outcome.ours.error}")
    tagged = [row for row in case.rows if row in TEXT_SWITCHES]
    for size in range(1, len(tagged) + 1):
        for subset in itertools.combinations(tagged, size):
            if outcome.ours.error is not None and "blank-reference" not in subset:
                continue
            if text_ratio(outcome, frozenset(subset), meta) == theirs:
                return Explanation(list(subset))
    return Explanation([], "no documented row reproduces their number")


# ---------------------------------------------------------------------- the rows

ROWS: dict[str, Row] = {
    row.id: row
    for row in [
        Row("context-relevance-no-evaluations", _no_evaluations),
        Row("context-precision-reference", shows=_precision_reference),
        Row("answer-relevancy-partial-options", _partial_options),
        Row("toxicity-no-verdicts", _toxicity_no_verdicts),
        Row("verdict-case-and-space", _verdict_folding),
        Row("verdict-off-vocabulary", _off_vocabulary),
        Row("factuality-unparseable", _factuality_unparseable),
        Row("factuality-lone-letter", _lone_letter),
        Row("factuality-category-score-range"),  # explain(): _score_range_rows
        Row("factuality-mixed-letters", _mixed_letters),
        Row("blank-reference"),  # text kinds: a switch; factuality: below
        Row("text-compared-with-reference"),
        Row("keyword-stopwords"),
        Row("completeness-extraction"),
        Row("tone-lexicon"),
        Row("tone-curly-apostrophes"),
        Row("utf16-lengths"),
        Row("trajectory-json-key-order"),
        # checked in conformance/kinds_agent.py (explain), with its kinds' share of
        # trajectory-json-key-order
        Row("rubric-required-from-judge"),
        Row("trajectory-nothing-to-check"),
        # checked in conformance/kinds_rag.py (ROW_CHECKS), like its kinds' share of
        # blank-reference and verdict-case-and-space
        Row("prompt-alignment-requirements"),
        Row("prompt-alignment-score-range"),
    ]
}


def _blank_factuality(outcome: Outcome, meta: dict[str, Any]) -> bool:
    return (outcome.ours.error or "").startswith(
        "CaseError"
    ) and outcome.theirs.error is None


def explain(outcome: Outcome, meta: dict[str, Any]) -> Explanation:
    """Which documented rows explain this case's difference (empty: none does)."""
    if outcome.case.kind in AGENT_KINDS:  # conformance/kinds_agent.py
        return Explanation(*agent_explain(outcome))
    if not outcome.case.script:
        return _explain_text(outcome, meta)
    rows = outcome.case.rows
    if "factuality-category-score-range" in rows:  # ours refused the options
        found = _score_range_rows(outcome)
        if found:
            return Explanation(found)
    for row_id in rows:
        row = ROWS[row_id]
        check = RAG_ROW_CHECKS.get(row_id, {}).get(outcome.case.kind) or (
            _blank_factuality if row_id == "blank-reference" else row.explains
        )
        if check is not None and check(outcome, meta):
            return Explanation([row_id])
    both = ["answer-relevancy-partial-options", "verdict-off-vocabulary"]
    if (
        all(row in rows for row in both)
        and (outcome.ours.error or "").startswith("JudgeError")
        and outcome.theirs.score == "NaN"
    ):
        return Explanation(both)  # ours refuses the verdict, theirs has no weight
    return Explanation([], "no documented row reproduces their number")


def shown(outcome: Outcome, meta: dict[str, Any]) -> list[str]:
    """The behaviour rows (not about numbers) this case shows."""
    return [
        row_id
        for row_id in outcome.case.rows
        if ROWS[row_id].shows is not None and ROWS[row_id].shows(outcome, meta)  # type: ignore[misc]
    ]


def documented_row_ids(text: str | None = None) -> list[str]:
    """The ids in the first column of the tables under the "Where our numbers differ"
    heading, down to the next heading of the same or a higher level."""
    text = DIFFERENCES.read_text(encoding="utf-8") if text is None else text
    heading = re.search(rf"^(#+) {re.escape(_TITLE)}[ \t]*$", text, flags=re.MULTILINE)
    if heading is None:
        raise ValueError(f"no heading {_TITLE!r} in the differences page")
    level = len(heading.group(1))
    after = re.search(rf"^#{{1,{level}}} ", text[heading.end() :], flags=re.MULTILINE)
    end = heading.end() + after.start() if after else len(text)
    section = text[heading.end() : end]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE)
