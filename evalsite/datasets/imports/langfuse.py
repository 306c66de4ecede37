"""Langfuse dataset items, as Langfuse exports them (CSV, JSON array or JSON Lines).

Column names, from langfuse/langfuse (commit 62751446, Aug 2026):
- packages/shared/src/server/repositories/dataset-items.ts, toDomainType and
  convertLatestRowToDomain: id, projectId, datasetId, status, sourceTraceId,
  sourceObservationId, createdAt, updatedAt, validFrom, then input, expectedOutput,
  metadata, then datasetName;
- worker/src/features/database-read-stream/getDatabaseReadStream.ts, case
  "dataset_items": the batch export adds htmlSourcePath;
- packages/shared/src/server/utils/transforms/transformStreamToCsv.ts with
  packages/shared/src/utils/stringify.ts (stringifyForCsv): a CSV header from the first
  row's keys, every cell quoted, strings as they are and anything else (objects, dates)
  as JSON text, null as an empty cell; JSON and JSONL write each row with JSON.stringify.
- web/src/features/public-api/types/datasets.ts, APIDatasetItem: the public API's items
  (GET /api/public/dataset-items) have the same names plus mediaReferences.

A Langfuse dataset item has an input and an expected output, never a model output: the
items' output is empty and the expected output is the reference.
"""

from __future__ import annotations

from typing import Any

from evalsite.datasets.imports.base import (
    ImportedRow,
    ImportSummary,
    decode_cell,
    split_input,
    split_output,
)
from evalsite.datasets.parsing import Limits, Problem, RawRow

# The item's own fields, kept under metadata.langfuse.
FIELDS = (
    "id",
    "projectId",
    "datasetId",
    "datasetName",
    "status",
    "sourceTraceId",
    "sourceObservationId",
    "createdAt",
    "updatedAt",
    "validFrom",
    "htmlSourcePath",
    "mediaReferences",
)
# Names only Langfuse uses: any one of them with an "input" column says Langfuse.
MARKERS = frozenset(
    {
        "expectedOutput",
        "datasetId",
        "datasetName",
        "sourceTraceId",
        "sourceObservationId",
        "htmlSourcePath",
    }
)


def looks_like(columns: list[str]) -> bool:
    names = set(columns)
    return "input" in names and bool(names & MARKERS)


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
    if "input" not in values:
        return Problem(
            "A Langfuse dataset item has an input; this row has no input column.",
            row=raw.row,
            column="input",
            line=raw.line,
        )
    summary.rows += 1
    source = split_input(values["input"])
    expected = values.get("expectedOutput")
    reference = split_output(expected) if expected not in (None, "") else None
    own = values.get("metadata")
    metadata: dict[str, Any] = {}
    if isinstance(own, dict):
        metadata.update(own)
    elif own not in (None, ""):
        metadata["metadata"] = own
    info = {k: values[k] for k in FIELDS if values.get(k) not in (None, "")}
    if source.rest is not None:
        info["input"] = values["input"]
    if reference is not None and reference.rest is not None:
        info["expectedOutput"] = expected
    for key, value in values.items():
        if key not in FIELDS and key not in ("input", "expectedOutput", "metadata"):
            metadata[key] = value
    if info.get("status") == "ARCHIVED":
        summary.count(
            "archived",
            "Archived in Langfuse: {n} item{s}, imported like the others "
            "(metadata.langfuse.status says which).",
        )
    if source.conversation is not None:
        summary.count(
            "chat",
            "Chat messages as input: {n} item{s}, each with the messages as its "
            "conversation and the last user message as its input.",
        )
    metadata["langfuse"] = info
    return ImportedRow(
        index=index,
        input=source.text,
        output="",
        reference=reference.text if reference is not None else "",
        metadata=metadata,
        system_prompt=source.system_prompt,
        conversation=source.conversation,
    )


def finish(summary: ImportSummary) -> None:
    summary.input_source = "input"
    summary.warn(
        "Langfuse dataset items hold an input and an expected output but no model "
        "output: the items' output is empty and the expected output is their reference."
    )
    summary.finish()
