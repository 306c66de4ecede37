"""promptfoo results: the file `promptfoo eval -o results.json` writes.

Its shape (written by promptfoo 0.123.1; tests/fixtures/imports/promptfoo_results.json
was made by running it, see make_promptfoo.py):

    {"evalId": "...",
     "results": {"version": 3, "timestamp": "...", "prompts": [...],
                 "results": [row, ...], "stats": {...}},
     "config": {...}, "shareableUrl": ..., "metadata": {"promptfooVersion": ...},
     "vars": [...], "runtimeOptions": {...}}

One row per (test, prompt, provider): `vars`, `prompt.raw` (the rendered prompt),
`provider` {id, label}, `response.output`, `error`, `success`, `score`, `latencyMs`,
`cost`, `failureReason` (0 none, 1 an assertion failed, 2 an error), `testCase`
{vars, assert, options, description, metadata} and `gradingResult` whose
`componentResults` are the assertions' {assertion {type, value}, pass, score, reason}.

Each row's group is its prompt x provider (promptIdx): one dataset version and one run
each. Every assertion (componentResults) is a grade of the scorer named by its metric
or type: "imported" (promptfoo's own pass, score, reason; a failed assertion is a failed
result), or factuality (a category, see _category, scored with the test's own
`options.factuality`, one scorer per set of category scores). The row itself is a grade
of the "promptfoo test" scorer (success, score, reason; an error row is an error), so
its counts are promptfoo's stats. Scores and category scores outside 0-1 (promptfoo
takes any number) are clamped to 0-1 (scoring.ranges) and counted in the summary. Errors: rows promptfoo recorded as errors, and
factuality grader replies promptfoo could not read (_FACTUALITY_FAILURES).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, BinaryIO

import scoring
from evalsite.datasets.parsing.jsonfile import json_row
from evalsite.datasets.parsing.jsonscan import members
from evalsite.datasets.parsing.limits import (
    MAX_COLUMNS,
    Limits,
    ParseError,
    Problem,
    RawRow,
    too_many_keys,
)
from evalsite.datasets.parsing.rows import iter_raw_rows
from evalsite.datasets.parsing.text import as_text
from evalsite.datasets.readers.base import (
    Grade,
    ImportedRow,
    ImportFailed,
    ImportSummary,
)

SUPPORTED_VERSIONS = (3,)
RENDERED_PROMPT = "(rendered prompt)"
# Vars used as the input unless the user chooses, best first (case-insensitive).
INPUT_VARS = ("query", "question", "input", "prompt", "user_input", "text")
# promptfoo's factuality options (getFactualityScoreLookup) and their defaults.
_FACTUALITY_KEYS = {
    "A": ("subset", 1.0),
    "B": ("superset", 1.0),
    "C": ("agree", 1.0),
    "D": ("disagree", 0.0),
    "E": ("differButFactual", 1.0),
}
# Our factuality options' names for the same categories (scoring.options.CategoryScores).
_OUR_KEYS = {
    "A": "subset",
    "B": "superset",
    "C": "agree",
    "D": "disagree",
    "E": "differ_but_factual",
}
# When the score fits several categories: the order one is chosen in.
_CHOICE_ORDER = "CABED"
# promptfoo's reason when the judge gave none (FACTUALITY_CATEGORY_DESCRIPTIONS).
_FALLBACK_REASON = re.compile(r"^Category ([A-E]): ")
# The reasons promptfoo's factuality matcher fails with when the grader's reply cannot
# be read or never came (graders matchesFactuality: parseLegacyFactualityResponse,
# parseFactualityJsonResponse, fail(resp.error || "No output")): grader failures,
# imported as errors as our own factuality scorer treats an unreadable reply.
_FACTUALITY_FAILURES = (
    "Factuality checker output did not match expected format",
    "Invalid category value:",
    "No output",
    "API error:",
)
# The scorer holding each test's own result (promptfoo's success, score, reason).
TEST_SCORER = "promptfoo test"
# failureReason values (promptfoo ResultFailureReason).
_FAILURE = {0: "none", 1: "assertion", 2: "error"}


SUPPORTED_FORMS = (
    "`promptfoo eval -o results.json` (results version 3, as promptfoo 0.123.1 "
    "writes it) or `promptfoo eval -o results.jsonl` (one result per line)"
)
CSV_REFUSED = (
    "This is promptfoo's CSV output (`promptfoo eval -o results.csv`): it holds each "
    "test's overall status, score and reason per prompt, but not its assertions' "
    "grades, so evalsite does not import it. Write the same eval with "
    f"{SUPPORTED_FORMS} and import that file."
)
_ROW_KEYS = ('"testIdx"', '"promptIdx"')


def looks_like(head: str) -> bool:
    """Whether the start of a file is a promptfoo results document."""
    text = head.lstrip("\ufeff \t\r\n")
    return text.startswith("{") and (
        '"evalId"' in text[:2000]
        or ('"results"' in text[:2000] and '"version"' in text[:4000])
    )


def sniff(head: str) -> str | None:
    """Which promptfoo output the start of a file is: "json" (-o results.json),
    "jsonl" (-o results.jsonl: one result row per line), "csv" (-o results.csv,
    refused: CSV_REFUSED), or None."""
    text = head.lstrip("\ufeff \t\r\n")
    first = text.split("\n", 1)[0]
    # A results.json written on one line holds rows too; its evalId comes first.
    if text.startswith("{") and '"evalId"' in text[:2000]:
        return "json"
    if (
        first.startswith("{")
        and all(k in first for k in _ROW_KEYS)
        and ('"gradingResult"' in first or '"testCase"' in first)
    ):
        return "jsonl"
    if looks_like(head):
        return "json"
    header = head.lstrip("\ufeff").split("\n", 1)[0]
    if "Grader Reason" in header and ",Status," in header and ",[" in header:
        return "csv"
    return None


def factuality_lookup(options: Any) -> dict[str, float]:
    """The category scores a test's options give (promptfoo's defaults for the rest),
    as promptfoo scores with them: any finite number."""
    given = options.get("factuality") if isinstance(options, dict) else None
    given = given if isinstance(given, dict) else {}
    lookup = {}
    for letter, (key, default) in _FACTUALITY_KEYS.items():
        value = given.get(key, default)
        lookup[letter] = (
            float(value)
            if isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            else default
        )
    return lookup


def our_options(lookup: dict[str, float]) -> dict[str, Any]:
    """Our factuality scorer's options for promptfoo's category scores: each within
    0-1 (scoring.ranges), so a score promptfoo took outside it is clamped. The pass
    stays promptfoo's: clamping keeps a score above 0 above 0, and one at or below 0
    at 0."""
    return {
        "category_scores": {
            _OUR_KEYS[k]: scoring.clamp_score(v, 1.0) for k, v in lookup.items()
        },
    }


def _out_of_range(lookup: dict[str, float]) -> list[str]:
    """promptfoo's names of the categories whose score is outside 0-1."""
    return [
        _FACTUALITY_KEYS[k][0]
        for k, v in lookup.items()
        if not scoring.score_in_range(v, 1.0)
    ]


def _count_clamped_categories(lookup: dict[str, float], summary: ImportSummary) -> None:
    if _out_of_range(lookup):
        summary.count(
            "category_clamped",
            "{n} factuality grade{s} came from tests whose own category scores are "
            "outside 0-1 (promptfoo takes any number; evalsite keeps every score "
            "within 0-1): each such category score was clamped to 0-1, so those "
            "grades score 0 or 1 where promptfoo recorded less or more, with "
            "promptfoo's pass.",
        )


def default_lookup() -> dict[str, float]:
    return {letter: default for letter, (_key, default) in _FACTUALITY_KEYS.items()}


def factuality_scorer_name(lookup: dict[str, float]) -> str:
    """'factuality', or with the categories whose scores differ from promptfoo's
    defaults: one scorer per set of category scores, so each test keeps its own."""
    defaults = default_lookup()
    changed = [f"{k} {v:g}" for k, v in lookup.items() if v != defaults[k]]
    return "factuality" + (f" ({', '.join(changed)})" if changed else "")


def _category(
    grade: dict[str, Any], lookup: dict[str, float]
) -> tuple[str | None, bool]:
    """(category, inferred) of a factuality grade that agrees with promptfoo's pass and
    score; (None, False) when none does.

    promptfoo keeps no category (buildFactualityResult: pass, score, reason), so the
    one that scores and passes as promptfoo recorded is taken. Its own fallback reason
    ("Category C: ..." when the judge gave none) names the category; it is believed
    only when that category gives promptfoo's score and pass, so a judge's reason that
    merely opens with "Category D:" never turns a B into a D. Several categories with
    the same score: the choice is marked inferred (it scores and passes the same).
    """
    score = grade.get("score")
    passed = grade.get("pass") is True
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        return None, False

    def fits(letter: str) -> bool:
        value = lookup[letter]
        return abs(value - float(score)) < 1e-9 and (value > 0) == passed

    reason = grade.get("reason")
    if isinstance(reason, str):
        m = _FALLBACK_REASON.match(reason)
        if m and fits(m.group(1)):
            return m.group(1), False
    candidates = [letter for letter in _CHOICE_ORDER if fits(letter)]
    if not candidates:
        return None, False
    return candidates[0], len(candidates) > 1


def _grader_failed(comp: dict[str, Any]) -> bool:
    """Whether promptfoo recorded a grader failure rather than a grade: its
    graderError flag, or one of the reasons its factuality matcher fails with when
    the grader's reply cannot be parsed or never came."""
    metadata = comp.get("metadata")
    if isinstance(metadata, dict) and metadata.get("graderError") is True:
        return True
    reason = comp.get("reason")
    kind = _assertion(comp).get("type")
    return (
        kind == "factuality"
        and isinstance(reason, str)
        and reason.startswith(_FACTUALITY_FAILURES)
    )


def _assertion(comp: dict[str, Any]) -> dict[str, Any]:
    assertion = comp.get("assertion")
    return assertion if isinstance(assertion, dict) else {}


def _score(value: Any, summary: ImportSummary) -> float | None:
    """promptfoo's score as ours (0-1, scoring.ranges): None when it is no finite
    number; clamped, and counted, when promptfoo gave one outside 0-1 (it takes any
    number)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if scoring.score_in_range(value, 1.0):
        return float(value)
    try:
        clamped = scoring.clamp_score(value, 1.0)
    except scoring.ScoringError:
        return None
    summary.count(
        "clamped",
        "{n} grade{s} had a score outside 0-1 (promptfoo takes any number): "
        "each is imported clamped to 0-1 with its pass as promptfoo recorded it.",
    )
    return clamped


def _imported(
    name: str, comp: dict[str, Any], summary: ImportSummary, *, kind: str = "imported"
) -> Grade:
    """A non-factuality assertion (or the test's own result) as an imported grade."""
    reason = as_text(comp.get("reason"))[:5000]
    score = _score(comp.get("score"), summary)
    if score is None or not isinstance(comp.get("pass"), bool):
        return _error_grade(
            name,
            kind,
            {},
            f"promptfoo recorded no pass and score for this {name}; its reason: {reason}",
            summary,
        )
    passed = comp["pass"]
    summary.verdicts["pass" if passed else "fail"] += 1
    analysis: dict[str, Any] = {"passed": passed, "score": score, "reason": reason}
    value = _assertion(comp).get("value")
    if value is not None:
        analysis["assertion"] = {"type": _assertion(comp).get("type"), "value": value}
    return Grade(scorer=name, kind=kind, options={}, analysis=analysis, reason=reason)


def _error_grade(
    name: str, kind: str, options: dict[str, Any], error: str, summary: ImportSummary
) -> Grade:
    summary.verdicts["error"] += 1
    return Grade(
        scorer=name,
        kind=kind,
        options=options,
        analysis=None,
        reason="",
        error=error[:5000] or "promptfoo recorded no grade.",
    )


def _factuality(
    comp: dict[str, Any], lookup: dict[str, float], summary: ImportSummary
) -> Grade:
    name = factuality_scorer_name(lookup)
    options = our_options(lookup)
    reason = as_text(comp.get("reason"))
    _count_clamped_categories(lookup, summary)
    if _grader_failed(comp):
        return _error_grade(
            name,
            "factuality",
            options,
            f"promptfoo could not read the grader's reply: {reason}",
            summary,
        )
    category, inferred = _category(comp, lookup)
    if category is None:
        return _error_grade(
            name,
            "factuality",
            options,
            f"promptfoo's factuality grade (score {comp.get('score')!r}, "
            f"{'pass' if comp.get('pass') else 'fail'}) fits no category under the "
            f"test's factuality scores; its reason: {reason}",
            summary,
        )
    summary.verdicts["pass" if lookup[category] > 0 else "fail"] += 1
    summary.categories[category] += 1
    if inferred:
        summary.count(
            "inferred",
            "{n} factuality grade{s} did not say their category (promptfoo keeps "
            "only pass, score and reason): each was imported as a category with the "
            "same score and pass, so the run's numbers are promptfoo's. Read the "
            "reason before overriding the category.",
        )
    return Grade(
        scorer=name,
        kind="factuality",
        options=options,
        analysis={"category": category, "reason": reason},
        reason=reason,
        inferred=inferred,
    )


class PromptfooReader:
    """Stream a promptfoo results file (JSON) or its JSON Lines rows into ImportedRows.

    One group per prompt x provider (promptfoo's promptIdx): each becomes its own run.
    """

    def __init__(
        self,
        texts: Iterable[str] | None = None,
        *,
        limits: Limits,
        input_var: str | None = None,
        jsonl: BinaryIO | None = None,
    ) -> None:
        self._texts = texts
        self._jsonl = jsonl
        self._limits = limits
        self._input_var = input_var or None
        self.summary = ImportSummary(
            tool="promptfoo", file_format="jsonl" if jsonl is not None else "json"
        )
        self.grader = ""
        self._prompts: list[dict[str, Any]] = []
        self._indexes: dict[str, int] = {}

    def rows(self) -> Iterator[ImportedRow | Problem]:
        if self._jsonl is not None:
            yield from self._jsonl_rows(self._jsonl)
        else:
            yield from self._json_rows()
        summary = self.summary
        if summary.rows == 0:
            raise ImportFailed("The promptfoo results file has no results to import.")
        summary.input_choices = [*self._vars_seen, RENDERED_PROMPT]
        if self._input_var and self._input_var not in summary.input_choices:
            raise ImportFailed(
                f"No test has a var named {self._input_var!r}; vars found: "
                f"{', '.join(self._vars_seen) or 'none'}."
            )
        summary.finish()

    _vars_seen: list[str]

    def _jsonl_rows(self, binary: BinaryIO) -> Iterator[ImportedRow | Problem]:
        self._vars_seen = []
        columns: list[str] = []
        for raw in iter_raw_rows(binary, "jsonl", columns, self._limits):
            if isinstance(raw, Problem):
                yield raw
                continue
            yield self._row(raw.values, raw.row)

    def _json_rows(self) -> Iterator[ImportedRow | Problem]:
        self._vars_seen = []
        events = members(
            self._texts or (),
            limits=self._limits,
            descend={(), ("results",)},
            split={("results", "results")},
            keep={
                ("evalId",),
                ("metadata",),
                ("results", "version"),
                ("results", "timestamp"),
                ("results", "prompts"),
                ("results", "stats"),
            },
        )
        summary = self.summary
        version: Any = None
        for event in events:
            if event[0] == "value":
                _, path, text = event
                value = _decode(text)
                if path == ("results", "version"):
                    version = value
                    _check_version(version)
                    summary.details["version"] = version
                elif path == ("evalId",):
                    summary.details["eval_id"] = as_text(value)[:200]
                elif path == ("results", "timestamp"):
                    summary.details["timestamp"] = as_text(value)[:100]
                elif path == ("results", "prompts") and isinstance(value, list):
                    self._prompts = [p if isinstance(p, dict) else {} for p in value]
                elif path == ("results", "stats") and isinstance(value, dict):
                    summary.details["stats"] = {
                        k: value.get(k) for k in ("successes", "failures", "errors")
                    }
                elif path == ("metadata",) and isinstance(value, dict):
                    pf = value.get("promptfooVersion")
                    if pf is not None:
                        summary.details["promptfoo_version"] = as_text(pf)[:50]
                continue
            _, path, n, text = event
            if version is None:
                raise ImportFailed(
                    "This JSON has promptfoo results but no results.version before "
                    "them, so its format cannot be told; promptfoo writes version 3."
                )
            raw = _row_object(text, n, self._limits)
            if isinstance(raw, Problem):
                yield raw
                continue
            yield self._row(raw.values, n)
        if version is None:
            raise ImportFailed(
                "This JSON is not a promptfoo results file: it has no results.version "
                "(promptfoo's `eval -o results.json` writes one)."
            )

    def _input_key(self, vars_: dict[str, Any]) -> str | None:
        if self._input_var:
            return None if self._input_var == RENDERED_PROMPT else self._input_var
        lower = {k.lower(): k for k in vars_}
        for key in INPUT_VARS:
            if key in lower:
                return lower[key]
        return None

    def _group(self, values: dict[str, Any], provider_name: str, label: str) -> str:
        """The run this row belongs to: its prompt x provider (promptIdx), labelled
        "<provider> · <prompt label>"."""
        index = values.get("promptIdx")
        prompt = (
            self._prompts[index]
            if isinstance(index, int) and 0 <= index < len(self._prompts)
            else {}
        )
        provider = as_text(prompt.get("provider")) or provider_name
        text = as_text(prompt.get("label")) or label
        text = " ".join(text.split())
        text = text if len(text) <= 60 else text[:59] + "…"
        prefix = f"#{index + 1} " if isinstance(index, int) else ""
        return f"{prefix}{provider} · {text}"[:180]

    def _row(self, values: dict[str, Any], n: int) -> ImportedRow | Problem:
        summary = self.summary
        summary.rows += 1
        test_case = _dict(values.get("testCase"))
        vars_ = _dict(values.get("vars")) or _dict(test_case.get("vars"))
        if len(vars_) > MAX_COLUMNS:
            # Kept whole in the item's metadata, listed on its pages: bounded like keys.
            return Problem(too_many_keys(n, len(vars_), "vars"), row=n, column="vars")
        for name in vars_:
            if name not in self._vars_seen and len(self._vars_seen) < 200:
                self._vars_seen.append(name)
        prompt = _dict(values.get("prompt"))
        rendered = as_text(prompt.get("raw"))
        key = self._input_key(vars_)
        if key is not None and key in vars_:
            input_text = as_text(vars_[key])
            summary.input_source = summary.input_source or f"var {key}"
        else:
            if self._input_var and self._input_var != RENDERED_PROMPT:
                return Problem(
                    f"This result has no var {self._input_var!r}.",
                    row=n,
                    column="vars",
                )
            input_text = rendered
            summary.input_source = summary.input_source or "the rendered prompt"
        response = _dict(values.get("response"))
        output = as_text(response.get("output"))
        provider = values.get("provider")
        if isinstance(provider, dict):
            provider_name = as_text(provider.get("label") or provider.get("id"))
        else:
            provider_name = as_text(provider)
        group = self._group(values, provider_name, as_text(prompt.get("label")))
        if group not in self._indexes:
            self._indexes[group] = 0
            summary.groups.append(group)
        index = self._indexes[group]
        self._indexes[group] += 1
        failure = values.get("failureReason")
        error = as_text(values.get("error") or response.get("error"))
        errored = failure == 2 or (failure is None and bool(error) and not output)

        declared = [a for a in (test_case.get("assert") or []) if isinstance(a, dict)]
        lookup = factuality_lookup(test_case.get("options"))
        grading = values.get("gradingResult")
        components = (
            grading.get("componentResults") if isinstance(grading, dict) else None
        )
        components = (
            [c for c in components if isinstance(c, dict)]
            if isinstance(components, list)
            else []
        )
        grades: list[Grade] = []
        seen: dict[str, int] = {}

        def unique(name: str) -> str:
            seen[name] = seen.get(name, 0) + 1
            return name if seen[name] == 1 else f"{name} #{seen[name]}"

        if components:
            for comp in components:
                assertion = _assertion(comp)
                kind = as_text(assertion.get("type")) or "(untyped)"
                if kind == "factuality":
                    grade = _factuality(comp, lookup, summary)
                    grades.append(replace(grade, scorer=unique(grade.scorer)))
                else:
                    summary.other_assertions[kind] += 1
                    name = as_text(assertion.get("metric")) or kind
                    grades.append(_imported(unique(name[:150]), comp, summary))
        elif errored:
            # promptfoo graded nothing: each asserted check is an error, with the
            # error promptfoo recorded.
            for assertion in declared:
                kind = as_text(assertion.get("type")) or "(untyped)"
                if kind == "factuality":
                    name = factuality_scorer_name(lookup)
                    _count_clamped_categories(lookup, summary)
                    grades.append(
                        _error_grade(
                            unique(name),
                            "factuality",
                            our_options(lookup),
                            error,
                            summary,
                        )
                    )
                else:
                    name = as_text(assertion.get("metric")) or kind
                    grades.append(
                        _error_grade(unique(name[:150]), "imported", {}, error, summary)
                    )
        # The test as promptfoo counts it (its stats): pass, fail or error.
        test_reason = (
            as_text(grading.get("reason")) if isinstance(grading, dict) else ""
        )
        if errored:
            grades.append(
                _error_grade(TEST_SCORER, "imported", {}, error or test_reason, summary)
            )
        else:
            grades.append(
                _imported(
                    TEST_SCORER,
                    {
                        "pass": values.get("success"),
                        "score": values.get("score"),
                        "reason": test_reason or error,
                    },
                    summary,
                )
            )
        if not self.grader:
            options = _dict(test_case.get("options"))
            grader = options.get("provider")
            if isinstance(grader, dict):
                grader = grader.get("id") or grader.get("label")
            if grader:
                self.grader = as_text(grader)[:200]

        reference_source = next(
            (
                _assertion(c)
                for c in components
                if _assertion(c).get("type") == "factuality"
            ),
            None,
        ) or next((a for a in declared if a.get("type") == "factuality"), None)
        reference = as_text(reference_source.get("value")) if reference_source else ""
        if errored:
            summary.count(
                "errors",
                "{n} result{s} ended in an error in promptfoo (no output): each of "
                "their checks is an error result with promptfoo's error.",
            )
        # The test's own metadata stays the item's; promptfoo's facts go under
        # "promptfoo". "id" names the test, so the compare page pairs each test's
        # items across the runs (its default key).
        own = test_case.get("metadata")
        metadata: dict[str, Any] = dict(own) if isinstance(own, dict) else {}
        test_index = values.get("testIdx")
        metadata.setdefault(
            "id",
            f"test-{test_index + 1}" if isinstance(test_index, int) else f"row-{n}",
        )
        info: dict[str, Any] = {
            "vars": vars_,
            "prompt": rendered,
            "prompt_label": as_text(prompt.get("label")),
            "provider": provider_name,
            "test_index": test_index,
            "prompt_index": values.get("promptIdx"),
            "success": values.get("success"),
            "score": values.get("score"),
            "failure_reason": _failure(failure),
            "latency_ms": values.get("latencyMs"),
            "cost": values.get("cost"),
            "result_id": values.get("id"),
        }
        if test_case.get("description"):
            info["description"] = test_case.get("description")
        if error:
            info["error"] = error
        metadata["promptfoo"] = {k: v for k, v in info.items() if v is not None}
        return ImportedRow(
            index=index,
            input=input_text,
            output=output,
            reference=reference,
            metadata=metadata,
            group=group,
            grades=grades,
        )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _failure(value: Any) -> Any:
    return _FAILURE.get(value, value) if isinstance(value, int) else value


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _check_version(version: Any) -> None:
    if version in SUPPORTED_VERSIONS:
        return
    raise ImportFailed(
        f"This promptfoo results file has version {version!r}; evalsite reads version "
        f"{', '.join(map(str, SUPPORTED_VERSIONS))}, which promptfoo 0.123.1 writes "
        "(`promptfoo eval -o results.json`). Write the results again with that promptfoo.",
        [
            Problem(
                f"Unsupported results.version {version!r}.", column="results.version"
            )
        ],
    )


def _row_object(text: str, n: int, limits: Limits) -> RawRow | Problem:
    """One results row decoded with the upload's checks (storable text, cell size)."""
    try:
        return json_row(
            text,
            row=n,
            line=None,
            label=f"Result {n}",
            limits=limits,
            nesting_checked=True,
        )
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"The JSON is malformed in result {n}: {exc.msg}.",
            [Problem(f"Malformed JSON: {exc.msg}.", row=n)],
        ) from None
