"""LangSmith dataset examples (JSON Lines, a JSON array, or CSV).

Field and column names, from langchain-ai/langsmith-sdk (commit bc8dd672, Aug 2026):
- python/langsmith/schemas.py, ExampleBase and Example: an example is {id, dataset_id,
  inputs, outputs, metadata, created_at, modified_at, source_run_id, attachments};
  `inputs` and `outputs` are objects, `outputs` the expected (reference) outputs. What
  `client.list_examples()` returns, written one per line, is a JSON Lines export; a CSV
  holding those fields has `inputs`/`outputs`/`metadata` cells of JSON text.
- python/langsmith/evaluation/_runner.py, _flatten_experiment_results (what
  ExperimentResults.to_pandas() writes): `inputs.<key>`, `outputs.<key>` (the run's
  outputs), `reference.<key>` (the example's outputs), `feedback.<key>`, error,
  execution_time, example_id, id. client.py get_test_results writes `input.<key>` for
  the inputs, otherwise the same. With `reference.` columns, `outputs.` is the model's
  output; without them it is the example's expected output.
- `input_<key>` / `output_<key>` columns (inputs and expected outputs) are read as well;
  no LangSmith source we could read names them, so they are a convenience, not a format.

Chat examples (`inputs.messages` as {"role", "content"} messages) become the item's
conversation.
"""

from __future__ import annotations

import math
from typing import Any

from evalsite.datasets.imports.base import (
    ImportedRow,
    ImportSummary,
    Split,
    decode_cell,
    split_input,
    split_output,
)
from evalsite.datasets.parsing import Limits, Problem, RawRow

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
_OUTPUT_PREFIXES = ("outputs.", "output_")
_REFERENCE_PREFIX = "reference."
_FEEDBACK_PREFIX = "feedback."


def looks_like(columns: list[str]) -> bool:
    names = set(columns)
    if names & {"inputs", "source_run_id"} or (
        "dataset_id" in names and "outputs" in names
    ):
        return True
    return any(c.startswith(_INPUT_PREFIXES) for c in columns)


def _prefixed(values: dict[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        for prefix in prefixes:
            if key.startswith(prefix) and len(key) > len(prefix):
                out[key[len(prefix) :]] = value
                break
    return out


def _number(value: Any) -> Any:
    """A CSV cell holding a number (a feedback score, seconds) as that number."""
    if isinstance(value, str):
        for kind in (int, float):
            try:
                number = kind(value)
            except ValueError:
                continue
            return number if math.isfinite(number) else value
    return value


def row(
    raw: RawRow,
    *,
    index: int,
    file_format: str,
    limits: Limits,
    summary: ImportSummary,
) -> ImportedRow | Problem:
    values = raw.values
    if file_format == "csv":
        values = {k: decode_cell(v, limits) for k, v in values.items()}
    if "inputs" in values:
        inputs: Any = values["inputs"]
    else:
        inputs = _prefixed(values, _INPUT_PREFIXES) or None
    if inputs in (None, "", {}):
        return Problem(
            "A LangSmith example has inputs; this row has no inputs column (nor "
            "inputs.<key> / input_<key> columns).",
            row=raw.row,
            column="inputs",
            line=raw.line,
        )
    summary.rows += 1
    experiment = any(k.startswith(_REFERENCE_PREFIX) for k in values)
    produced: Any = None
    if "outputs" in values:
        expected: Any = values["outputs"]
    elif experiment:
        expected = _prefixed(values, (_REFERENCE_PREFIX,)) or None
        produced = _prefixed(values, ("outputs.",)) or None
    else:
        expected = _prefixed(values, _OUTPUT_PREFIXES) or None
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
    feedback = {
        k: _number(v) if file_format == "csv" else v
        for k, v in _prefixed(values, (_FEEDBACK_PREFIX,)).items()
    }
    if file_format == "csv" and "execution_time" in info:
        info["execution_time"] = _number(info["execution_time"])
    if feedback:
        info["feedback"] = feedback
        summary.count(
            "feedback",
            "{n} row{s} carried LangSmith feedback scores: they are kept in "
            "metadata.langsmith.feedback, not imported as verdicts.",
        )
    known = set(FIELDS) | {"inputs", "outputs", "metadata"}
    for key, value in values.items():
        if key in known or key.startswith(
            (*_INPUT_PREFIXES, *_OUTPUT_PREFIXES, _REFERENCE_PREFIX, _FEEDBACK_PREFIX)
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
    )


def finish(summary: ImportSummary) -> None:
    summary.input_source = "inputs"
    if not summary.details.get("experiment"):
        summary.warn(
            "LangSmith examples hold inputs and expected outputs but no model output: "
            "the items' output is empty and the expected outputs are their reference."
        )
    summary.finish()
