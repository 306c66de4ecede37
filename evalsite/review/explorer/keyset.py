"""Keyset (cursor) paging over a run's results, for every sort the explorer offers.

Offset paging makes the database walk every skipped row (page 5,000 of a 100k-item
run reads 250k index entries first), and the explorer used to stop at its count cap.
A cursor names the last row seen by its sort values and id instead, so each page starts
with an index range condition wherever it is.

A sort is split into *segments*: rows whose nullable sort column is set, then those
where it is NULL (the explorer sorts NULLs last whatever the direction). Inside a
segment every column is non-null and the ordering ends in a unique column, so "after
the cursor" is a plain lexicographic comparison: no duplicates and no gaps between
pages, however many rows tie on the sort value.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q, QuerySet

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result


@dataclass(frozen=True)
class Column:
    name: str
    descending: bool = False


@dataclass(frozen=True)
class Segment:
    """Rows matching `where`, ordered by `prefix` (run_id, constant per run: it keeps
    the unique (run, item, run_scorer) index usable, see selectors.RUN_RANGE_SORTS)
    then `columns`, the last of which is unique within the run."""

    where: Q
    columns: tuple[Column, ...]
    prefix: tuple[Column, ...] = ()


def _scored(field: str, *, descending: bool) -> tuple[Segment, ...]:
    return (
        Segment(
            Q(**{f"{field}__isnull": False}),
            (Column(field, descending), Column("id", descending)),
        ),
        Segment(Q(**{f"{field}__isnull": True}), (Column("id", descending),)),
    )


# One entry per key of selectors.SORTS, with the same order of rows.
SEGMENTS: dict[str, tuple[Segment, ...]] = {
    "item": (
        Segment(
            Q(),
            (Column("item_id"), Column("run_scorer_id")),
            prefix=(Column("run_id"),),
        ),
    ),
    "-item": (
        Segment(
            Q(),
            (Column("item_id", True), Column("run_scorer_id", True)),
            prefix=(Column("run_id", True),),
        ),
    ),
    "score": _scored("judge_score", descending=False),
    "-score": _scored("judge_score", descending=True),
    "final": _scored("final_score", descending=False),
    "-final": _scored("final_score", descending=True),
    # Most uncertain first, then by item (selectors.SORTS); unsplit results last.
    "-uncertainty": (
        Segment(
            Q(judge_uncertainty__isnull=False),
            (Column("judge_uncertainty", True), Column("item_id"), Column("id")),
        ),
        Segment(Q(judge_uncertainty__isnull=True), (Column("item_id"), Column("id"))),
    ),
    "uncertainty": (
        Segment(
            Q(judge_uncertainty__isnull=False),
            (Column("judge_uncertainty"), Column("item_id"), Column("id")),
        ),
        Segment(Q(judge_uncertainty__isnull=True), (Column("item_id"), Column("id"))),
    ),
    "updated": (Segment(Q(), (Column("updated_at"), Column("id"))),),
    "-updated": (Segment(Q(), (Column("updated_at", True), Column("id", True))),),
}


# Every Result column a cursor holds, whatever the sort (cursor_of reads them).
CURSOR_COLUMNS: tuple[str, ...] = tuple(
    sorted(
        {
            column.name
            for segments in SEGMENTS.values()
            for segment in segments
            for column in segment.columns
        }
    )
)


class CursorError(ApplicationError):
    """A cursor that does not decode for this sort (edited or from another sort)."""


@dataclass(frozen=True)
class Cursor:
    segment: int
    values: tuple[Any, ...]

    def encode(self) -> str:
        raw = json.dumps(
            [self.segment, [_dump(v) for v in self.values]], separators=(",", ":")
        )
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _dump(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def cursor_decode(token: str, *, sort: str, field: str = "after") -> Cursor:
    """The cursor in `token`, checked against `sort`'s segments (CursorError names
    `field` when it does not fit)."""
    error = CursorError(
        f"Invalid {field}: this page link is broken or belongs to another sort; "
        "start again from the first page.",
        field_errors={field: "Not a page position for this sort."},
    )
    try:
        padded = token + "=" * (-len(token) % 4)
        segment, values = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise error from None
    segments = SEGMENTS[sort]
    if not isinstance(segment, int) or not 0 <= segment < len(segments):
        raise error
    columns = segments[segment].columns
    if not isinstance(values, list) or len(values) != len(columns):
        raise error
    parsed = []
    for column, value in zip(columns, values, strict=True):
        parsed.append(_parse(column.name, value, error))
    return Cursor(segment, tuple(parsed))


def _parse(name: str, value: Any, error: CursorError) -> Any:
    if name == "updated_at":
        if not isinstance(value, str):
            raise error
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise error from None
        if parsed.tzinfo is None:
            raise error
        return parsed
    if name.endswith("_score") or name == "judge_uncertainty":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise error
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise error
    return value


def _beyond(
    columns: tuple[Column, ...], values: tuple[Any, ...], *, forward: bool
) -> Q:
    """Rows strictly after (forward) or before the cursor in the segment's order.

    Written as `c1 >= v1 AND (c1 > v1 OR (c1 = v1 AND ...))` rather than a bare OR,
    so the first column is an index range condition and a deep page starts at the
    cursor instead of scanning the rows before it."""
    first, value = columns[0], values[0]
    ahead = first.descending != forward  # True: later rows have larger values
    op = "gt" if ahead else "lt"
    strict = Q(**{f"{first.name}__{op}": value})
    if len(columns) == 1:
        return strict
    rest = _beyond(columns[1:], values[1:], forward=forward)
    return Q(**{f"{first.name}__{op}e": value}) & (
        strict | (Q(**{first.name: value}) & rest)
    )


def _order(segment: Segment, *, forward: bool) -> list[str]:
    return [
        f"{'-' if c.descending == forward else ''}{c.name}"
        for c in (*segment.prefix, *segment.columns)
    ]


@dataclass
class KeysetPage:
    """One page of result ids, in sort order, with cursors to either side."""

    ids: list[int]
    first: Cursor | None
    last: Cursor | None
    has_next: bool
    has_previous: bool

    @property
    def next_cursor(self) -> str | None:
        return self.last.encode() if self.has_next and self.last else None

    @property
    def previous_cursor(self) -> str | None:
        return self.first.encode() if self.has_previous and self.first else None


def keyset_page(
    qs: QuerySet[Result],
    *,
    sort: str,
    limit: int,
    after: Cursor | None = None,
    before: Cursor | None = None,
    last_page: bool = False,
) -> KeysetPage:
    """The page of `qs` after `after`, before `before`, the last page, or the first.

    Steps: walk the sort's segments in order (backwards for `before` and the last
    page), each with the cursor's condition in its own segment, taking limit + 1 rows
    (the extra one says whether there is another page); then the cursors of the
    page's first and last rows.
    """
    segments = SEGMENTS[sort]
    forward = before is None and not last_page
    cursor = after if forward else before
    qs = qs.order_by()
    order = range(len(segments)) if forward else range(len(segments) - 1, -1, -1)
    rows: list[tuple[int, tuple[Any, ...]]] = []
    for index in order:
        if cursor is not None and (
            index < cursor.segment if forward else index > cursor.segment
        ):
            continue
        segment = segments[index]
        part = qs.filter(segment.where)
        if cursor is not None and index == cursor.segment:
            part = part.filter(_beyond(segment.columns, cursor.values, forward=forward))
        names = [c.name for c in segment.columns]
        wanted = limit + 1 - len(rows)
        fetched = part.order_by(*_order(segment, forward=forward)).values_list(
            "id", *names
        )[:wanted]
        rows += [(index, tuple(row)) for row in fetched]
        if len(rows) > limit:
            break
    more = len(rows) > limit
    rows = rows[:limit]
    if not forward:
        rows.reverse()

    def at(row: tuple[int, tuple[Any, ...]]) -> Cursor:
        return Cursor(row[0], row[1][1:])

    return KeysetPage(
        ids=[row[1][0] for row in rows],
        first=at(rows[0]) if rows else None,
        last=at(rows[-1]) if rows else None,
        has_next=more if forward else not last_page,
        has_previous=(after is not None) if forward else more,
    )


def cursor_of(result: Result, *, sort: str) -> Cursor:
    """The cursor that names `result`'s place in `sort` (its segment and values)."""
    for index, segment in enumerate(SEGMENTS[sort]):
        columns = segment.columns
        values = tuple(getattr(result, c.name) for c in columns)
        # Sorts of more than one segment start with the rows whose value is set.
        if len(SEGMENTS[sort]) > 1 and index == 0 and values[0] is None:
            continue
        return Cursor(index, values)
    raise AssertionError(f"no segment of {sort!r} holds result {result.pk}")


def page_links(
    base_url: str, params: dict[str, str], page: KeysetPage
) -> dict[str, str | None]:
    """First, previous, next and last links keeping `params` (filters, page size):
    None where there is no such page."""

    def link(extra: dict[str, str]) -> str:
        query = urlencode({**params, **extra})
        return f"{base_url}?{query}" if query else base_url

    return {
        "first": link({}) if page.has_previous else None,
        "previous": link({"before": page.previous_cursor})
        if page.previous_cursor
        else None,
        "next": link({"after": page.next_cursor}) if page.next_cursor else None,
        "last": link({"last": "1"}) if page.has_next else None,
    }
