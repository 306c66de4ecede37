"""A pairwise queue's answers as a file for analysts ("export everything a
reviewer added"): one row per answer, CSV or JSON Lines, streamed.

Columns, in file order:
    pair_id, position, match_value (the key value or input the items matched on),
    item_a_id, item_a_index, item_b_id, item_b_index (run A's and run B's items),
    input (run A's item), input_b (run B's item: matching by key or by normalised
    input lets the two differ), output_a, output_b (the real runs' outputs, not the
    sides shown), shown_left (a or b: whose output this reviewer saw on the left),
    reviewer, choice (a, b or tie: the run preferred, mapped back from the side),
    preferred_run_id (run A's or B's id, empty for a tie), side (left, right or tie:
    as clicked), reason, guideline_version, seconds (where the browser measured it),
    answered_at, updated_at (ISO 8601, UTC).

Blindness is the pairwise page's and API's rule (`preferences_visible_to`): while a
pair still takes answers, its answers are left out for a user who has not answered
it, whatever their role; their own answers and complete pairs are always in.

Memory and queries stay constant: the answers come in one `values_list` query read
in chunks (`.iterator(chunk_size=…)`, a server-side cursor on Postgres) with the
items joined in, nothing is looked up per row, and bytes leave in pieces through
`evalsite.lib.streams`, as the run exports' do.

CSV text cells go through `evalsite.lib.csvsafe.safe_cell`, the run exports' rule
against spreadsheet formulas; JSONL is data for programs and left exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from django.contrib.auth.models import User
from django.utils.text import slugify

from evalsite.lib.csvsafe import safe_cell
from evalsite.lib.streams import csv_stream, jsonl_stream
from evalsite.review.models import Preference, ReviewQueue
from evalsite.review.pairwise.selectors import preferences_visible_to

PairwiseFormat = Literal["csv", "jsonl"]

CHUNK_SIZE = 2000

# (column, Preference field read for it); None: computed from the row.
_FIELDS: tuple[tuple[str, str | None], ...] = (
    ("pair_id", "pair_id"),
    ("position", "pair__position"),
    ("match_value", "pair__match_value"),
    ("item_a_id", "pair__item_a_id"),
    ("item_a_index", "pair__item_a__index"),
    ("item_b_id", "pair__item_b_id"),
    ("item_b_index", "pair__item_b__index"),
    ("input", "pair__item_a__input"),
    ("input_b", "pair__item_b__input"),
    ("output_a", "pair__item_a__output"),
    ("output_b", "pair__item_b__output"),
    ("shown_left", "a_left"),
    ("reviewer", "reviewer__username"),
    ("choice", "choice"),
    ("preferred_run_id", None),
    ("side", "side"),
    ("reason", "reason"),
    ("guideline_version", "guideline__version"),
    ("seconds", "seconds"),
    ("answered_at", "created_at"),
    ("updated_at", "updated_at"),
)
COLUMNS: tuple[str, ...] = tuple(column for column, _ in _FIELDS)
_VALUES = tuple(f for _, f in _FIELDS if f is not None)
_READ = tuple(column for column, f in _FIELDS if f is not None)
# Columns written as they are in CSV: ids, counts, numbers and times cannot start
# like a formula; every other cell is text and goes through safe_cell.
_PLAIN = frozenset(
    {
        "pair_id",
        "position",
        "item_a_id",
        "item_a_index",
        "item_b_id",
        "item_b_index",
        "preferred_run_id",
        "guideline_version",
    }
)


def pairwise_export_rows(
    *, queue: ReviewQueue, user: User, chunk_size: int = CHUNK_SIZE
) -> Iterator[dict[str, Any]]:
    """The answers `user` may see on the queue, one dict per answer (COLUMNS), in
    pair order then answer order; lazily, `chunk_size` rows from the database at a
    time."""
    preferred = {
        Preference.Choice.A.value: queue.run_id,
        Preference.Choice.B.value: queue.run_b_id,
    }
    rows = (
        preferences_visible_to(queue=queue, user=user)
        .values_list(*_VALUES)
        .iterator(chunk_size=chunk_size)
    )
    for values in rows:
        record = dict(zip(_READ, values, strict=True))
        record["shown_left"] = "a" if record["shown_left"] else "b"
        record["preferred_run_id"] = preferred.get(record["choice"])
        yield {column: record[column] for column in COLUMNS}


def _csv_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if column in _PLAIN:
        return str(value)
    return safe_cell(value)


def pairwise_export_stream(
    *,
    queue: ReviewQueue,
    user: User,
    fmt: PairwiseFormat,
    excel: bool = False,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[bytes]:
    """The queue's answers `user` may see as CSV or JSONL bytes, in pieces (`excel`:
    a UTF-8 byte-order mark, for CSV only)."""
    records = pairwise_export_rows(queue=queue, user=user, chunk_size=chunk_size)
    if fmt == "jsonl":
        return jsonl_stream(records)
    return csv_stream(
        COLUMNS,
        ([_csv_cell(c, record[c]) for c in COLUMNS] for record in records),
        excel=excel,
    )


def pairwise_export_filename(
    *, queue: ReviewQueue, fmt: PairwiseFormat, excel: bool = False
) -> str:
    """The attachment's name, "<queue-name-slug>-pairwise-<id>[-excel].<fmt>": the
    queue's name as an ASCII slug (at most 60 characters) so no quote, slash or
    control character reaches Content-Disposition, as the run exports name theirs."""
    slug = slugify(queue.name)[:60].strip("-")
    parts = [slug] if slug else []
    parts.append(f"pairwise-{queue.pk}")
    if excel and fmt == "csv":
        parts.append("excel")
    return f"{'-'.join(parts)}.{fmt}"
