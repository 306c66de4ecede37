"""promptfoo results: the file `promptfoo eval -o results.json` writes.

Its shape (written by promptfoo 0.123.1; tests/fixtures/imports/promptfoo_results.json
was made by running it, see make_promptfoo_fixture.sh):

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

A factuality assertion becomes our factuality scorer's verdict. promptfoo keeps only its
pass, score and reason, not the category the judge chose (graders buildFactualityResult),
so the category is read back, in order: from promptfoo's own reason when the judge gave
none ("Category C: ..."); from the score, when one category alone has that score under
the test's factuality scores (`options.factuality`, defaults A/B/C/E 1, D 0: a fail
with the defaults is D); otherwise one of the categories with that score is chosen, which
scores and passes the same, and the summary says how many were.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from evalsite.datasets.imports.base import (
    ImportedRow,
    ImportFailed,
    ImportSummary,
    Verdict,
    as_text,
)
from evalsite.datasets.imports.jsonstream import JsonStream
from evalsite.datasets.parsing import Limits, ParseError, Problem, RawRow, _json_row

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
# failureReason values (promptfoo ResultFailureReason).
_FAILURE = {0: "none", 1: "assertion", 2: "error"}


def looks_like(head: str) -> bool:
    """Whether the start of a file is a promptfoo results document."""
    text = head.lstrip("\ufeff \t\r\n")
    return text.startswith("{") and (
        '"evalId"' in text[:2000]
        or ('"results"' in text[:2000] and '"version"' in text[:4000])
    )


def factuality_lookup(options: Any) -> dict[str, float]:
    """The category scores a test's options give (promptfoo's defaults for the rest)."""
    given = options.get("factuality") if isinstance(options, dict) else None
    given = given if isinstance(given, dict) else {}
    lookup = {}
    for letter, (key, default) in _FACTUALITY_KEYS.items():
        value = given.get(key, default)
        lookup[letter] = (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else default
        )
    return lookup


def our_options(lookup: dict[str, float]) -> dict[str, Any]:
    """Our factuality scorer's options that score as promptfoo did."""
    return {
        "category_scores": {_OUR_KEYS[k]: v for k, v in lookup.items()},
    }


def _category(
    grade: dict[str, Any], lookup: dict[str, float]
) -> tuple[str | None, bool]:
    """(category, inferred) for a factuality grade; (None, False) when none fits."""
    reason = grade.get("reason")
    if isinstance(reason, str):
        m = _FALLBACK_REASON.match(reason)
        if m:
            return m.group(1), False
    score = grade.get("score")
    passed = bool(grade.get("pass"))
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        return None, False
    fits = [
        letter
        for letter in _CHOICE_ORDER
        if abs(lookup[letter] - float(score)) < 1e-9 and (lookup[letter] > 0) == passed
    ]
    if not fits:
        return None, False
    return fits[0], len(fits) > 1


def _verdict(
    grade: dict[str, Any], lookup: dict[str, float], summary: ImportSummary
) -> Verdict:
    reason = as_text(grade.get("reason"))
    category, inferred = _category(grade, lookup)
    if category is None:
        summary.verdicts["error"] += 1
        return Verdict(
            analysis=None,
            score=None,
            passed=None,
            error=(
                f"promptfoo's factuality grade (score {grade.get('score')!r}, "
                f"{'pass' if grade.get('pass') else 'fail'}) fits no category under the "
                f"test's factuality scores; its reason: {reason}"
            )[:5000],
        )
    summary.verdicts["pass" if lookup[category] > 0 else "fail"] += 1
    summary.categories[category] += 1
    if inferred:
        summary.count(
            "inferred",
            "{n} factuality verdict{s} did not say their category (promptfoo keeps "
            "only pass, score and reason): each was imported as a category with the "
            "same score and pass, so the run's numbers are promptfoo's. Read the "
            "reason before overriding the category.",
        )
    return Verdict(
        analysis={"category": category, "reason": reason},
        score=lookup[category],
        passed=lookup[category] > 0,
        reason=reason,
        inferred=inferred,
    )


class PromptfooReader:
    """Stream a promptfoo results file into ImportedRows."""

    def __init__(
        self, texts: Iterable[str], *, limits: Limits, input_var: str | None = None
    ) -> None:
        self._texts = texts
        self._limits = limits
        self._input_var = input_var or None
        self.summary = ImportSummary(tool="promptfoo", file_format="json")
        self.scorer_options: dict[str, Any] | None = None
        self.grader = ""

    def rows(self) -> Iterator[ImportedRow | Problem]:
        stream = JsonStream(
            self._texts,
            limits=self._limits,
            descend={(), ("results",)},
            split={("results", "results")},
            keep={
                ("evalId",),
                ("metadata",),
                ("results", "version"),
                ("results", "timestamp"),
            },
        )
        summary = self.summary
        version: Any = None
        saw_results = False
        index = 0
        providers: set[str] = set()
        vars_seen: list[str] = []
        for event in stream.events():
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
                elif path == ("metadata",) and isinstance(value, dict):
                    pf = value.get("promptfooVersion")
                    if pf is not None:
                        summary.details["promptfoo_version"] = as_text(pf)[:50]
                continue
            _, path, n, text = event
            saw_results = True
            if version is None:
                raise ImportFailed(
                    "This JSON has promptfoo results but no results.version before "
                    "them, so its format cannot be told; promptfoo writes version 3."
                )
            raw = _row_object(text, n, self._limits)
            if isinstance(raw, Problem):
                yield raw
                continue
            row = self._row(raw.values, index, n, providers, vars_seen)
            if isinstance(row, Problem):
                yield row
                continue
            index += 1
            yield row
        if version is None:
            raise ImportFailed(
                "This JSON is not a promptfoo results file: it has no results.version "
                "(promptfoo's `eval -o results.json` writes one)."
            )
        if not saw_results:
            raise ImportFailed("The promptfoo results file has no results to import.")
        summary.input_choices = [*vars_seen, RENDERED_PROMPT]
        if self._input_var and self._input_var not in summary.input_choices:
            raise ImportFailed(
                f"No test has a var named {self._input_var!r}; vars found: "
                f"{', '.join(vars_seen) or 'none'}."
            )
        if len(providers) > 1:
            summary.warn(
                f"The eval ran {len(providers)} providers ({', '.join(sorted(providers))}): "
                "each provider's answers are separate items, told apart by "
                "metadata.promptfoo.provider."
            )
        summary.finish()

    def _input_key(self, vars_: dict[str, Any]) -> str | None:
        if self._input_var:
            return None if self._input_var == RENDERED_PROMPT else self._input_var
        lower = {k.lower(): k for k in vars_}
        for key in INPUT_VARS:
            if key in lower:
                return lower[key]
        return None

    def _row(
        self,
        values: dict[str, Any],
        index: int,
        n: int,
        providers: set[str],
        vars_seen: list[str],
    ) -> ImportedRow | Problem:
        summary = self.summary
        summary.rows += 1
        test_case = _dict(values.get("testCase"))
        vars_ = _dict(values.get("vars")) or _dict(test_case.get("vars"))
        for name in vars_:
            if name not in vars_seen and len(vars_seen) < 200:
                vars_seen.append(name)
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
        providers.add(provider_name)
        error = as_text(values.get("error") or response.get("error"))

        grading = values.get("gradingResult")
        components = (
            grading.get("componentResults") if isinstance(grading, dict) else None
        )
        components = components if isinstance(components, list) else []
        factuality: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        for comp in components:
            if not isinstance(comp, dict):
                continue
            assertion = comp.get("assertion")
            kind = assertion.get("type") if isinstance(assertion, dict) else None
            entry = {
                "type": as_text(kind) if kind is not None else "",
                "value": assertion.get("value")
                if isinstance(assertion, dict)
                else None,
                "pass": comp.get("pass"),
                "score": comp.get("score"),
                "reason": comp.get("reason"),
            }
            if kind == "factuality":
                factuality.append(comp)
            else:
                summary.other_assertions[entry["type"] or "(untyped)"] += 1
                others.append(entry)
        # The expected answer: the factuality assertion's value, even when it was not
        # graded (an errored row has no gradingResult).
        declared = [
            a
            for a in (test_case.get("assert") or [])
            if isinstance(a, dict) and a.get("type") == "factuality"
        ]
        reference_source = factuality[0].get("assertion") if factuality else None
        if not isinstance(reference_source, dict) and declared:
            reference_source = declared[0]
        reference = (
            as_text(reference_source.get("value"))
            if isinstance(reference_source, dict)
            else ""
        )
        if len(factuality) > 1 or len(declared) > 1:
            summary.count(
                "several",
                "{n} test{s} had more than one factuality assertion: the first is the "
                "verdict; the others are kept in metadata.promptfoo.assertions.",
            )
            for comp in factuality[1:]:
                assertion = comp.get("assertion") or {}
                others.append(
                    {
                        "type": "factuality",
                        "value": assertion.get("value"),
                        "pass": comp.get("pass"),
                        "score": comp.get("score"),
                        "reason": comp.get("reason"),
                    }
                )

        options = test_case.get("options")
        lookup = factuality_lookup(options)
        verdict: Verdict | None = None
        if factuality:
            verdict = _verdict(factuality[0], lookup, summary)
        elif declared:
            # Asked for but never graded: the provider call failed.
            summary.verdicts["error"] += 1
            verdict = Verdict(
                analysis=None,
                score=None,
                passed=None,
                error=(error or "promptfoo did not grade this result.")[:5000],
            )
        if verdict is not None:
            options_here = our_options(lookup)
            if self.scorer_options is None:
                self.scorer_options = options_here
            elif options_here != self.scorer_options:
                summary.count(
                    "options",
                    "{n} test{s} used other factuality category scores than the first "
                    "test; the run scores every verdict with the first test's.",
                )
            if not self.grader and isinstance(options, dict):
                grader = options.get("provider")
                if isinstance(grader, dict):
                    grader = grader.get("id") or grader.get("label")
                if grader:
                    self.grader = as_text(grader)[:200]

        if error:
            summary.count(
                "errors",
                "{n} result{s} ended in an error in promptfoo (no output); they are "
                "imported with an empty output and the error in metadata.promptfoo.error.",
            )
        # The test's own metadata stays the item's; promptfoo's facts go under "promptfoo".
        own = test_case.get("metadata")
        metadata: dict[str, Any] = dict(own) if isinstance(own, dict) else {}
        info: dict[str, Any] = {
            "vars": vars_,
            "prompt": rendered,
            "prompt_label": as_text(prompt.get("label")),
            "provider": provider_name,
            "test_index": values.get("testIdx"),
            "prompt_index": values.get("promptIdx"),
            "success": values.get("success"),
            "score": values.get("score"),
            "failure_reason": _failure(values.get("failureReason")),
            "latency_ms": values.get("latencyMs"),
            "cost": values.get("cost"),
            "result_id": values.get("id"),
        }
        if test_case.get("description"):
            info["description"] = test_case.get("description")
        if error:
            info["error"] = error
        if others:
            info["assertions"] = others
        if verdict is not None and verdict.inferred:
            info["factuality_category_inferred"] = True
        metadata["promptfoo"] = {k: v for k, v in info.items() if v is not None}
        return ImportedRow(
            index=index,
            input=input_text,
            output=output,
            reference=reference,
            metadata=metadata,
            verdict=verdict,
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
        return _json_row(
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
