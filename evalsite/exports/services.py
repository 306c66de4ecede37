"""Streamed exports of a run's results and of a dataset's items, as CSV or JSONL.

Memory stays constant whatever the size: rows come from the database in chunks
(`.iterator(chunk_size=2000)`, a server-side cursor on Postgres), each row is turned into
text at once, and text leaves in ~64 KB pieces through a generator that the view wraps in
a StreamingHttpResponse. Nothing builds a list of all rows.

Columns (one row per item × scorer for runs):
    result_id, item_id, item_index, input, output, context (a JSON array),
    reference, metadata.<key> (one column per top-level metadata key found in the
    dataset, see `dataset_metadata_keys`), scorer, scorer_kind, status, judge_score,
    final_score, judge_passed, final_passed, reviewed, reviewer, override_notes, reason,
    error.
JSONL carries the same fields with JSON types, `context` as a list and `metadata` as
the item's own object (no flattening needed there).

Every CSV cell goes through `evalsite.lib.csvsafe.safe_cell`, the one rule that
neutralises formula-like text for spreadsheets (= + - @, also after leading whitespace
or line feeds and in their full-width forms); JSONL is data for programs and is left
exact. Judge connections (and so API keys) are never read here.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import Result, Run
from evalsite.exports.selectors import dataset_metadata_keys
from evalsite.lib.csvsafe import safe_cell
from evalsite.review.models import Override
from evalsite.review.schemas import ResultQuery
from evalsite.review.selectors import results_filter
from evalsite.review.selectors.explorer import results_selected

Format = Literal["csv", "jsonl"]
AnyUser = User | AnonymousUser

CHUNK_SIZE = 2000
FLUSH_BYTES = 64 * 1024
UTF8_BOM = "\ufeff"
NOTES_SEPARATOR = " | "

RUN_HEAD = (
    "result_id",
    "item_id",
    "item_index",
    "input",
    "output",
    "context",
    "reference",
)
RUN_TAIL = (
    "scorer",
    "scorer_kind",
    "status",
    "judge_score",
    "final_score",
    "judge_passed",
    "final_passed",
    "reviewed",
    "reviewer",
    "override_notes",
    "reason",
    "error",
)
DATASET_HEAD = ("item_id", "index", "input", "output", "context", "reference")

# Columns read per result, as tuples: model instances cost ~3x the time at 100k rows,
# and the analyses (large JSON the export does not show) are never loaded.
_RESULT_VALUES = (
    "id",
    "item_id",
    "item__index",
    "item__input",
    "item__output",
    "item__context",
    "item__reference",
    "item__metadata",
    "run_scorer_id",
    "status",
    "judge_score",
    "final_score",
    "judge_passed",
    "final_passed",
    "reviewed",
    "reviewed_by_id",
    "reason",
    "error",
)
_ITEM_VALUES = ("id", "index", "input", "output", "context", "reference", "metadata")
_BOOL_CELLS = {True: "true", False: "false", None: ""}

MEDIA_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
}


def run_export_queryset(
    *,
    run: Run,
    query: ResultQuery | None = None,
    user: AnyUser | None = None,
    ids: Collection[int] | None = None,
) -> QuerySet[Result]:
    """The results to export: the explorer's filter and sort (whole run when empty),
    restricted to `ids` when given (the explorer's bulk export of selected rows).

    Every id must be a result of `run` (review's `results_selected` raises
    ApplicationError otherwise): checked here, before the first byte is streamed."""
    qs = results_filter(
        run=run, query=query or ResultQuery(), user=user or AnonymousUser()
    )
    if ids is not None:
        qs = qs.filter(pk__in=results_selected(run=run, ids=ids))
    return qs.select_related(None)


def _batched(iterable: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in iterable:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _result_chunks(
    qs: QuerySet[Result], run: Run
) -> Iterator[tuple[list[tuple[Any, ...]], dict[int, list[str]], dict[int, str]]]:
    """Result rows as tuples (`_RESULT_VALUES`), 2000 at a time, with the active
    override notes and reviewer names of that chunk: two small queries per chunk,
    never one per row, and never anything for the whole run at once."""
    user_model = get_user_model()
    rows = qs.values_list(*_RESULT_VALUES).iterator(chunk_size=CHUNK_SIZE)
    for chunk in _batched(rows, CHUNK_SIZE):
        notes: dict[int, list[str]] = defaultdict(list)
        for result_id, note in (
            Override.objects.filter(
                result_id__in=[row[0] for row in chunk], reverted_at__isnull=True
            )
            .exclude(note="")
            .order_by("created_at", "id")
            .values_list("result_id", "note")
        ):
            notes[result_id].append(note)
        reviewer_ids = {row[15] for row in chunk if row[15] is not None}
        reviewers = (
            {
                u.pk: u.get_username()
                for u in user_model.objects.filter(pk__in=reviewer_ids)
            }
            if reviewer_ids
            else {}
        )
        yield chunk, notes, reviewers


def _result_records(qs: QuerySet[Result], run: Run) -> Iterator[dict[str, Any]]:
    """One dict per result (the JSONL shape)."""
    scorers = {rs.pk: (rs.name, rs.kind) for rs in run.run_scorers.all()}
    for chunk, notes, reviewers in _result_chunks(qs, run):
        for (
            result_id,
            item_id,
            index,
            input_,
            output,
            context,
            reference,
            metadata,
            run_scorer_id,
            status,
            judge_score,
            final_score,
            judge_passed,
            final_passed,
            reviewed,
            reviewed_by_id,
            reason,
            error,
        ) in chunk:
            name, kind = scorers.get(run_scorer_id, ("", ""))
            yield {
                "result_id": result_id,
                "item_id": item_id,
                "item_index": index,
                "input": input_,
                "output": output,
                "context": context if isinstance(context, list) else [],
                "reference": reference,
                "metadata": metadata if isinstance(metadata, dict) else {},
                "scorer": name,
                "scorer_kind": kind,
                "status": status,
                "judge_score": judge_score,
                "final_score": final_score,
                "judge_passed": judge_passed,
                "final_passed": final_passed,
                "reviewed": reviewed,
                "reviewer": reviewers.get(reviewed_by_id),
                "override_notes": notes.get(result_id, []),
                "reason": reason,
                "error": error,
            }


def _result_csv_rows(
    qs: QuerySet[Result], run: Run, keys: list[str]
) -> Iterator[list[str]]:
    """CSV cells straight from the tuples (no dict per row: this loop is the hot path)."""
    cell = safe_cell
    scorers = {rs.pk: (cell(rs.name), cell(rs.kind)) for rs in run.run_scorers.all()}
    for chunk, notes, reviewers in _result_chunks(qs, run):
        for (
            result_id,
            item_id,
            index,
            input_,
            output,
            context,
            reference,
            metadata,
            run_scorer_id,
            status,
            judge_score,
            final_score,
            judge_passed,
            final_passed,
            reviewed,
            reviewed_by_id,
            reason,
            error,
        ) in chunk:
            name, kind = scorers.get(run_scorer_id, ("", ""))
            row = [
                str(result_id),
                str(item_id),
                str(index),
                cell(input_),
                cell(output),
                # JSON text starts with "[": never formula-like.
                json.dumps(
                    context if isinstance(context, list) else [], ensure_ascii=False
                ),
                cell(reference),
            ]
            if keys:
                meta = metadata if isinstance(metadata, dict) else {}
                row.extend([cell(meta.get(k)) for k in keys])
            row += [
                name,
                kind,
                status,
                cell(judge_score),
                cell(final_score),
                _BOOL_CELLS[judge_passed],
                _BOOL_CELLS[final_passed],
                _BOOL_CELLS[reviewed],
                cell(reviewers.get(reviewed_by_id)),
                cell(NOTES_SEPARATOR.join(notes[result_id]))
                if result_id in notes
                else "",
                cell(reason),
                cell(error),
            ]
            yield row


# ------------------------------------------------------------------ rows


def run_columns(*, metadata_keys: list[str]) -> list[str]:
    return [*RUN_HEAD, *(f"metadata.{k}" for k in metadata_keys), *RUN_TAIL]


def _csv_cells(
    record: dict[str, Any], head: Iterable[str], keys: list[str], tail: Iterable[str]
) -> list[str]:
    cell = safe_cell
    cells = [cell(record[c]) for c in head]
    meta = record["metadata"]
    cells.extend(cell(meta.get(k)) for k in keys)
    for column in tail:
        value = record[column]
        if column == "override_notes":
            value = NOTES_SEPARATOR.join(value)
        cells.append(cell(value))
    return cells


def _csv_stream(
    header: list[str], rows: Iterable[list[str]], *, excel: bool
) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if excel:
        # Excel only reads a CSV as UTF-8 when it starts with a byte-order mark.
        buffer.write(UTF8_BOM)
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow(row)
        if buffer.tell() >= FLUSH_BYTES:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")


def _jsonl_stream(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    parts: list[str] = []
    size = 0
    for record in records:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        parts.append(line)
        size += len(line)
        if size >= FLUSH_BYTES:
            yield "".join(parts).encode("utf-8")
            parts, size = [], 0
    yield "".join(parts).encode("utf-8")


def run_export_stream(
    *,
    run: Run,
    fmt: Format,
    query: ResultQuery | None = None,
    user: AnyUser | None = None,
    excel: bool = False,
    ids: Collection[int] | None = None,
) -> Iterator[bytes]:
    """The run's results (or the filtered subset, or the `ids`) as CSV or JSONL bytes,
    in pieces.

    The column set is fixed before the first row (metadata keys of the whole dataset),
    so filtered and whole-run exports of one run have the same columns.
    """
    qs = run_export_queryset(run=run, query=query, user=user, ids=ids)
    if fmt == "jsonl":
        return _jsonl_stream(_result_records(qs, run))
    keys = dataset_metadata_keys(dataset=run.dataset)
    rows = _result_csv_rows(qs, run, keys)
    return _csv_stream(run_columns(metadata_keys=keys), rows, excel=excel)


# ------------------------------------------------------------------ datasets


def dataset_columns(*, metadata_keys: list[str]) -> list[str]:
    """Metadata keys as plain columns (so the file uploads again with the default mapping),
    prefixed "metadata." only where a key would clash with a fixed column."""
    return [
        *DATASET_HEAD,
        *(f"metadata.{k}" if k in DATASET_HEAD else k for k in metadata_keys),
    ]


def _item_records(dataset: Dataset) -> Iterator[dict[str, Any]]:
    rows = (
        Item.objects.filter(dataset=dataset)
        .order_by("index")
        .values_list(*_ITEM_VALUES)
        .iterator(chunk_size=CHUNK_SIZE)
    )
    for item_id, index, input_, output, context, reference, metadata in rows:
        yield {
            "item_id": item_id,
            "index": index,
            "input": input_,
            "output": output,
            "context": context if isinstance(context, list) else [],
            "reference": reference,
            "metadata": metadata if isinstance(metadata, dict) else {},
        }


def dataset_export_stream(
    *, dataset: Dataset, fmt: Format, excel: bool = False
) -> Iterator[bytes]:
    records = _item_records(dataset)
    if fmt == "jsonl":
        return _jsonl_stream(records)
    keys = dataset_metadata_keys(dataset=dataset)
    rows = (_csv_cells(r, DATASET_HEAD, keys, ()) for r in records)
    return _csv_stream(dataset_columns(metadata_keys=keys), rows, excel=excel)


def export_filename(*, kind: str, pk: int, fmt: Format, filtered: bool = False) -> str:
    return f"{kind}-{pk}{'-filtered' if filtered else ''}.{fmt}"
