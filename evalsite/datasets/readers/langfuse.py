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

Archived items (status ARCHIVED) are not part of the dataset as Langfuse runs it: its
experiments take only ACTIVE items (worker/src/features/experiments/
experimentServiceClickhouse.ts, getItemsToProcess: createDatasetItemFilterState with
status "ACTIVE"). They are left out here too, counted in the summary; a file of only
archived items is refused.
"""

from __future__ import annotations

from typing import Any

from evalsite.datasets.parsing.limits import Limits, Problem, RawRow
from evalsite.datasets.readers.base import (
    ImportedRow,
    ImportFailed,
    ImportSummary,
    decode_cell,
    split_input,
    split_output,
)

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
) -> ImportedRow | Problem | None:
    """The row as an item; None for an archived item (left out, counted)."""
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
    if values.get("status") == "ARCHIVED":
        summary.details["archived"] = summary.details.get("archived", 0) + 1
        summary.count(
            "archived",
            "Archived in Langfuse: {n} item{s} left out, as Langfuse's experiments "
            "leave them out (only ACTIVE items are run).",
        )
        return None
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
    archived = summary.details.get("archived", 0)
    if archived and not summary.rows:
        raise ImportFailed(
            f"Every item in this Langfuse export is archived ({archived}): Langfuse's "
            "experiments run only ACTIVE items, so there is nothing to import. "
            "Restore the items in Langfuse (status ACTIVE) and export again."
        )
    summary.input_source = "input"
    summary.warn(
        "Langfuse dataset items hold an input and an expected output but no model "
        "output: the items' output is empty and the expected output is their reference."
    )
    summary.finish()
