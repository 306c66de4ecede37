"""LangSmith dataset examples (JSON Lines, a JSON array, or CSV).

Field and column names, from langchain-ai/langsmith-sdk (commit bc8dd672, Aug 2026):
- python/langsmith/schemas.py, ExampleBase and Example: an example is {id, dataset_id,
  inputs, outputs, metadata, created_at, modified_at, source_run_id, attachments};
  `inputs` and `outputs` are objects, `outputs` the expected (reference) outputs. What
  `client.list_examples()` returns, written one per line, is a JSON Lines export; a CSV
  holding those fields has `inputs`/`outputs`/`metadata` cells of JSON text.
- python/langsmith/evaluation/_runner.py, _flatten_experiment_results (what
  ExperimentResults.to_pandas() writes): `inputs.<key>`, `outputs.<key>` (the run's
  outputs), error, `reference.<key>` (the example's outputs; none when the example has
  none), `feedback.<key>` (each evaluator's score, or its value when it gave no score),
  execution_time, example_id, id. client.py get_test_results writes `input.<key>` for
  the inputs and the mean score per key as `feedback.<key>`, otherwise the same. In both,
  `outputs.<key>` is the model's output, never the expected one. Written by pandas'
  to_csv, a dict or list cell is Python's repr of it, not JSON (base.decode_cell reads
  both).
- `input_<key>` / `output_<key>` columns (inputs and expected outputs) are read as well;
  no LangSmith source we could read names them, so they are a convenience, not a format.

An experiment's feedback scores are the judge's grades: each `feedback.<key>` is a
scorer of one finished run ("imported": LangSmith's score, 0-1). LangSmith records no
pass, so a score of at least 0.5 passes (the imported kind's default threshold; a
True/False score passes/fails); a score outside 0-1 is refused (LangSmith gives feedback
no scale, so neither the pass nor a 0-1 score can be told); an empty cell (the evaluator
failed or gave no score) is no result, as LangSmith's averages leave it out; a value
that is no number stays in metadata.

Chat examples (`inputs.messages` as {"role", "content"} messages) become the item's
conversation.
"""

from __future__ import annotations

import math
from typing import Any

import scoring
from evalsite.datasets.parsing.limits import Limits, Problem, RawRow
from evalsite.datasets.parsing.text import as_text
from evalsite.datasets.readers.base import (
    Grade,
    ImportedRow,
    ImportSummary,
    Split,
    decode_cell,
    split_input,
    split_output,
)

# An example's own fields, kept under metadata.langsmith.
FIELDS = (
    "id",
    "example_id",
    "dataset_id",
    "name",
    "created_at",
    "modified_at",
    "source_run_id",
    "attachments",
    "split",
    "error",
    "execution_time",
)
_INPUT_PREFIXES = ("inputs.", "input.", "input_")
# The run's (model's) outputs in an experiment export; expected outputs are
# `reference.<key>`, an `outputs` cell, or (convenience) `output_<key>`.
_RUN_OUTPUT_PREFIX = "outputs."
_EXPECTED_PREFIX = "output_"
_REFERENCE_PREFIX = "reference."
_FEEDBACK_PREFIX = "feedback."
# Columns only an experiment export (to_pandas, get_test_results) has.
_EXPERIMENT_PREFIXES = (_RUN_OUTPUT_PREFIX, _REFERENCE_PREFIX, _FEEDBACK_PREFIX)
# A score at or above this passes (the imported kind's default threshold).
PASS_AT = 0.5


def looks_like(columns: list[str]) -> bool:
    names = set(columns)
    if names & {"inputs", "source_run_id"} or (
        "dataset_id" in names and "outputs" in names
    ):
        return True
    return any(c.startswith(_INPUT_PREFIXES) for c in columns)


def _prefixed(
    values: dict[str, Any], prefixes: tuple[str, ...], *, skip_empty: bool = False
) -> dict[str, Any]:
    """The `<prefix><key>` columns as {key: value}; `skip_empty` leaves out empty
    cells (in a CSV from pandas, a key that row does not have)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if skip_empty and value in (None, ""):
            continue
        for prefix in prefixes:
            if key.startswith(prefix) and len(key) > len(prefix):
                out[key[len(prefix) :]] = value
                break
    return out


def _number(value: Any) -> Any:
    """A CSV cell holding a number (a feedback score, seconds) as that number, and
    pandas' True/False as a bool."""
    if isinstance(value, str):
        if value in ("True", "False"):
            return value == "True"
        for kind in (int, float):
            try:
                number = kind(value)
            except ValueError:
                continue
            return number if math.isfinite(number) else value
    return value


def _grade(key: str, value: Any, summary: ImportSummary) -> Grade | str | None:
    """One `feedback.<key>` cell as a grade of the scorer `key`; a message when the
    score cannot be imported; None when there is no score (an empty cell: kept out, as
    LangSmith's averages leave it out; a value: kept in metadata)."""
    if value is None or value == "":
        summary.count(
            f"empty:{key}",
            f"feedback.{key} is empty in {{n}} row{{s}} (its evaluator failed or gave "
            "no score): no result for those items, as LangSmith's averages leave "
            "them out.",
        )
        return None
    if isinstance(value, bool):
        score, passed = (1.0 if value else 0.0), value
    elif isinstance(value, (int, float)) and math.isfinite(value):
        if not scoring.score_in_range(value, 1.0):
            return (
                f"feedback.{key} is {value!r}, outside 0-1. LangSmith gives feedback "
                "scores no scale, so evalsite can tell neither their pass nor a 0-1 "
                "score; rescale the column to 0-1 (or remove it) and import again."
            )
        score = float(value)
        passed = score >= PASS_AT
    else:
        summary.count(
            f"value:{key}",
            f"feedback.{key} holds a value, not a score, in {{n}} row{{s}} "
            f"(e.g. {as_text(value)[:40]!r}): kept in metadata.langsmith.feedback, "
            "not a result.",
        )
        return None
    summary.verdicts["pass" if passed else "fail"] += 1
    return Grade(
        scorer=key,
        kind="imported",
        options={},
        analysis={"passed": passed, "score": score, "reason": ""},
    )


def row(
    raw: RawRow,
    *,
    index: int,
    file_format: str,
    limits: Limits,
    summary: ImportSummary,
) -> ImportedRow | Problem:
    values = raw.values
    csv = file_format == "csv"
    if csv:
        values = {
            k: decode_cell(v, limits, python_literals=True) for k, v in values.items()
        }
    if "inputs" in values:
        inputs: Any = values["inputs"]
    else:
        inputs = _prefixed(values, _INPUT_PREFIXES, skip_empty=csv) or None
    if inputs in (None, "", {}):
        return Problem(
            "A LangSmith example has inputs; this row has no inputs column (nor "
            "inputs.<key> / input_<key> columns).",
            row=raw.row,
            column="inputs",
            line=raw.line,
        )
    experiment = any(k.startswith(_EXPERIMENT_PREFIXES) for k in values)
    produced: Any = _prefixed(values, (_RUN_OUTPUT_PREFIX,), skip_empty=csv) or None
    if "outputs" in values:
        expected: Any = values["outputs"]
    elif experiment:
        expected = _prefixed(values, (_REFERENCE_PREFIX,), skip_empty=csv) or None
    else:
        expected = _prefixed(values, (_EXPECTED_PREFIX,), skip_empty=csv) or None
    feedback = {
        k: _number(v) if csv else v
        for k, v in _prefixed(values, (_FEEDBACK_PREFIX,)).items()
    }
    grades: list[Grade] = []
    for key, value in feedback.items():
        grade = _grade(key[:150], value, summary)
        if isinstance(grade, str):
            return Problem(grade, row=raw.row, column=f"feedback.{key}", line=raw.line)
        if grade is not None:
            grades.append(grade)
    summary.rows += 1
    source = split_input(inputs)
    reference = split_output(expected) if expected not in (None, "") else Split("")
    output = split_output(produced) if produced not in (None, "") else Split("")

    own = values.get("metadata")
    metadata: dict[str, Any] = {}
    if isinstance(own, dict):
        metadata.update(own)
    elif own not in (None, ""):
        metadata["metadata"] = own
    info: dict[str, Any] = {
        k: values[k] for k in FIELDS if values.get(k) not in (None, "")
    }
    # The whole object when only a part of it became the text.
    if source.rest is not None:
        info["inputs"] = inputs
    if reference.rest is not None:
        info["outputs" if "outputs" in values else "reference"] = expected
    if output.rest is not None:
        info["run_outputs"] = produced
    if csv and "execution_time" in info:
        info["execution_time"] = _number(info["execution_time"])
    given = {k: v for k, v in feedback.items() if v not in (None, "")}
    if given:
        info["feedback"] = given
    known = set(FIELDS) | {"inputs", "outputs", "metadata"}
    for key, value in values.items():
        if key in known or key.startswith(
            (*_INPUT_PREFIXES, *_EXPERIMENT_PREFIXES, _EXPECTED_PREFIX)
        ):
            continue
        metadata[key] = value
    if source.conversation is not None:
        summary.count(
            "chat",
            "Chat messages as input: {n} item{s}, each with the messages as its "
            "conversation and the last user message as its input.",
        )
    if experiment:
        summary.details["experiment"] = True
    metadata["langsmith"] = info
    return ImportedRow(
        index=index,
        input=source.text,
        output=output.text,
        reference=reference.text,
        metadata=metadata,
        system_prompt=source.system_prompt,
        conversation=source.conversation,
        grades=grades,
    )


def finish(summary: ImportSummary) -> None:
    summary.input_source = "inputs"
    if not summary.details.get("experiment"):
        summary.warn(
            "LangSmith examples hold inputs and expected outputs but no model output: "
            "the items' output is empty and the expected outputs are their reference."
        )
    if summary.verdict_total:
        summary.warn(
            "Each feedback.<key> column is a scorer of the run with LangSmith's score. "
            "LangSmith records no pass: a score of 0.5 or more passes (True and False "
            "pass and fail)."
        )
    summary.finish()
