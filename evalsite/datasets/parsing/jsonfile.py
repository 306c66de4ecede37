"""Rows of a JSON Lines file or of a .json file (one top-level array), and the checked
JSON decoder every reader uses.

A row's text is checked before it is decoded (bytes that were not UTF-8, nesting),
decoded with numbers the database cannot store refused, then its names and values are
checked (storable text, cell size, key count). The array is cut into rows by the one
streaming scanner (jsonscan). No Django in here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from evalsite.datasets.parsing.jsonscan import (
    array_elements,
    column_at,
    nesting_overflow,
)
from evalsite.datasets.parsing.limits import (
    MAX_COLUMN_NAME_CHARS,
    MAX_COLUMNS,
    MAX_INT_DIGITS,
    Limits,
    ParseError,
    Problem,
    RawRow,
    cell_too_large,
    not_utf8,
    row_too_large,
    too_deep,
    too_many_keys,
    unstorable,
)
from evalsite.datasets.parsing.text import (
    LongLine,
    json_type,
    lines,
    printable,
    undecodable,
)
from evalsite.lib.text import unstorable_char, unstorable_in

# Raw text that may decode to something lib.text refuses: a raw NUL, or a \u escape of
# NUL or of a surrogate (a lone one is refused; a pair is one ordinary character).
_MAYBE_UNSTORABLE = re.compile(r"\x00|\\u(?:0000|[dD][89a-fA-F])")


def _may_be_unstorable(text: str) -> bool:
    # The substring tests run at memchr speed and rule out almost every row.
    return ("\x00" in text or "\\u" in text) and bool(_MAYBE_UNSTORABLE.search(text))


# How much longer than its raw text a JSON value's compact JSON text can be (a raw
# control character in a string is written back as a six-character escape).
_CELL_GROWTH = 6


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number, and cannot be stored.")


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"The number {text[:40]} is too large to store.")
    return value


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(
            f"A number with {digits:,} digits is too large to store (at most "
            f"{MAX_INT_DIGITS:,})."
        )
    return int(text)


# strict=False keeps raw control characters in strings as they are, so that a raw NUL
# is refused with its column. One decoder: json.loads with options builds one per call.
def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose names are unique: json keeps the last of a repeated name, which
    would import one of two values silently."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise ValueError(
                    f"The name {printable(name)[:60]!r} appears twice in one JSON "
                    "object; keep one of them."
                )
            seen.add(name)
    return value


_DECODER = json.JSONDecoder(
    strict=False,
    parse_float=_json_float,
    parse_int=_json_int,
    parse_constant=_json_constant,
    object_pairs_hook=_json_object,
)


def loads(text: str) -> Any:
    """json.loads for uploaded text, after its nesting has been checked.

    JSONDecodeError for bad syntax; ValueError for numbers the database cannot store
    (NaN, Infinity, 1e400, thousands of digits).
    """
    return _DECODER.decode(text)


def _cell_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _json_cell_problem(
    values: dict[str, Any], text: str, limits: Limits
) -> tuple[str, str] | None:
    """The first column whose name or value cannot be stored or is too large.

    Each check runs only when the row's raw text says it could fail, so an ordinary
    row costs three tests on its text.
    """
    long_names = len(text) > MAX_COLUMN_NAME_CHARS
    suspicious = _may_be_unstorable(text)
    big = len(text) * _CELL_GROWTH > limits.max_cell_chars
    if not (long_names or suspicious or big):
        return None
    for key, value in values.items():
        column = printable(key)
        if len(key) > MAX_COLUMN_NAME_CHARS:
            return (
                f"This column's name is {len(key):,} characters long; a name may have "
                f"at most {MAX_COLUMN_NAME_CHARS:,}.",
                column[:60] + "…",
            )
        if suspicious:
            found = unstorable_char(key)
            if found:
                return (
                    f"The column name contains {found}, which cannot be stored.",
                    column,
                )
            found = unstorable_in(value, max_depth=limits.max_nesting + 1)
            if found:
                return unstorable(found), column
        if big and (chars := _cell_chars(value)) > limits.max_cell_chars:
            return cell_too_large(chars, limits), column
    return None


def json_row(
    text: str,
    *,
    row: int,
    line: int | None,
    label: str,
    limits: Limits,
    nesting_checked: bool = False,
) -> RawRow | Problem:
    """One row's JSON text, checked, then decoded. Raises JSONDecodeError on bad syntax.

    1. Bytes that were not UTF-8, then nesting (unless the caller counted it), on the
       text: both named with the column they are in.
    2. Decode; numbers the database cannot store are a problem.
    3. An object, whose names and values can be stored and fit the cell limit.
    """

    def problem(message: str, column: str | None = None) -> Problem:
        return Problem(message, row=row, column=column, line=line)

    bad = undecodable(text)
    if bad:
        return problem(not_utf8(bad.group()), column_at(text, bad.start()))
    if not nesting_checked:
        deep = nesting_overflow(text, limits.max_nesting)
        if deep is not None:
            return problem(too_deep(limits), column_at(text, deep))
    try:
        value = loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        return problem(str(exc))
    if not isinstance(value, dict):
        return problem(f"{label} is a JSON {json_type(value)}, not an object.")
    if len(value) > MAX_COLUMNS:
        return problem(too_many_keys(row, len(value)))
    found = _json_cell_problem(value, text, limits)
    if found:
        return problem(*found)
    return RawRow(row=row, line=line, values=value, chars=len(text))


def jsonl_rows(
    texts: Iterator[str], columns: list[str], limits: Limits
) -> Iterator[RawRow | Problem]:
    """One row per line that is not blank; a line that is not a JSON object, or over
    the limits, is a Problem and reading goes on."""
    known: set[str] = set()
    row_number = 0
    for line_number, line in enumerate(lines(texts, limits.max_row_chars), start=1):
        if isinstance(line, LongLine):
            row_number += 1
            yield Problem(
                row_too_large(limits),
                row=row_number,
                column=column_at(line.head, len(line.head)),
                line=line_number,
            )
            continue
        if not line.strip():
            continue
        row_number += 1
        try:
            out = json_row(
                line,
                row=row_number,
                line=line_number,
                label=f"Line {line_number}",
                limits=limits,
            )
        except json.JSONDecodeError as exc:
            out = Problem(
                f"Line {line_number} is not valid JSON: {exc.msg} (column {exc.colno}).",
                row=row_number,
                line=line_number,
            )
        if isinstance(out, RawRow):
            _track_columns(columns, known, out.values)
        yield out
    if row_number == 0:
        raise ParseError("The file is empty: no JSON lines found.")


def json_array_rows(
    texts: Iterator[str], columns: list[str], limits: Limits
) -> Iterator[RawRow | Problem]:
    """The elements of a top-level JSON array, one at a time, from streamed text."""
    known: set[str] = set()
    elements = 0
    for row, element in array_elements(texts, limits):
        elements = row
        try:
            out = json_row(
                element,
                row=row,
                line=None,
                label=f"Element {row} of the array",
                limits=limits,
                nesting_checked=True,
            )
        except json.JSONDecodeError as exc:
            # Past a syntax error the array's structure cannot be trusted: stop.
            raise ParseError(
                f"The JSON is malformed after element {row - 1} of the array: "
                f"{exc.msg} (in element {row}).",
                [Problem(f"Malformed JSON: {exc.msg}.", row=row)],
            ) from None
        if isinstance(out, RawRow):
            _track_columns(columns, known, out.values)
        yield out
    if elements == 0:
        raise ParseError("The file is empty: the JSON array has no rows.")


def _track_columns(columns: list[str], known: set[str], values: dict[str, Any]) -> None:
    if len(known) >= MAX_COLUMNS:
        return
    for key in values:
        if key not in known:
            if len(known) >= MAX_COLUMNS:
                return
            known.add(key)
            columns.append(key)
