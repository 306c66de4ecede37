"""Streamed parsing of uploaded dataset files (CSV, JSON Lines, JSON array): the entry
points the services call.

No Django in here: the services feed these generators a binary file object and insert
what comes out in batches. Memory stays bounded by the largest row a file may have
(`Limits`): files are read in chunks, never whole, rows are yielded one at a time, and
a row over the limits is refused while it streams by, never held whole.

Errors come in two kinds:
- `ParseError`: the file as a whole cannot be read (UTF-16, empty, broken JSON array,
  bad header, a CSV row that runs past the row limit). Parsing stops.
- `Problem` values yielded in place of a row (malformed JSONL line, non-object row, a
  context that is not a list of strings, a cell over the size limit, nesting deeper
  than the limit, text the database cannot store, ...). Parsing goes on so the caller
  can list the first few problems together.

The package's other modules: limits (bounds, Problem, ParseError, messages), text
(decoding, lines, a value as text), csvfile, jsonscan (the one streaming JSON scanner,
shared with the readers of other tools' files), jsonfile (JSON Lines and arrays, the
checked decoder), mapping (columns to item fields).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal, TypeGuard

from evalsite.datasets.parsing.csvfile import csv_rows
from evalsite.datasets.parsing.jsonfile import json_array_rows, jsonl_rows
from evalsite.datasets.parsing.limits import Limits, ParseError, Problem, RawRow
from evalsite.datasets.parsing.mapping import (
    PREVIEW_CELL_CHARS,
    Mapping,
    ParsedRow,
    check_columns_exist,
    map_row,
    suggest_mapping,
)
from evalsite.datasets.parsing.text import text_chunks

FileFormat = Literal["csv", "jsonl", "json"]
FORMATS: tuple[FileFormat, ...] = ("csv", "jsonl", "json")


def is_file_format(value: str) -> TypeGuard[FileFormat]:
    return value in FORMATS


PREVIEW_ROWS = 10

_EXTENSIONS: dict[str, FileFormat] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
}


@dataclass
class Preview:
    columns: list[str]
    rows: list[dict[str, Any]]
    file_format: str
    mapping: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)


def detect_format(
    filename: str, override: str | None = None, head: bytes = b""
) -> FileFormat:
    """The format chosen by the user, else from the extension, else from the first byte."""
    if override:
        if is_file_format(override):
            return override
        raise ParseError(
            f"Unknown format {override!r}; choose one of {', '.join(FORMATS)}."
        )
    ext = os.path.splitext(filename or "")[1].lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"[":
        return "json"
    if first == b"{":
        return "jsonl"
    return "csv"


def iter_raw_rows(
    binary: BinaryIO,
    file_format: FileFormat,
    columns: list[str],
    limits: Limits | None = None,
) -> Iterator[RawRow | Problem]:
    """Yield the file's rows as dicts (or a Problem for a row that cannot be read).

    `columns` is filled in as columns are discovered (the CSV header at once; JSON keys
    in order of first appearance). Raises ParseError when the file cannot be read.
    """
    limits = limits or Limits()
    texts = text_chunks(binary)
    if file_format == "csv":
        return csv_rows(texts, columns, limits)
    if file_format == "jsonl":
        return jsonl_rows(texts, columns, limits)
    return json_array_rows(texts, columns, limits)


def parse_rows(
    binary: BinaryIO,
    *,
    file_format: FileFormat,
    mapping: Mapping,
    columns: list[str] | None = None,
    limits: Limits | None = None,
) -> Iterator[ParsedRow | Problem]:
    """Yield mapped rows, or Problems in their place. Raises ParseError on a fatal error.

    A mapped column that exists in no row at all is reported at the end (CSV: at once,
    from the header) so that a typo in the mapping is named, not silently imported empty.
    """
    columns = [] if columns is None else columns
    limits = limits or Limits()
    index = 0
    header_checked = False
    had_problems = False
    for raw in iter_raw_rows(binary, file_format, columns, limits):
        if file_format == "csv" and not header_checked:
            header_checked = True
            check_columns_exist(mapping, columns, header=True)
        if isinstance(raw, Problem):
            had_problems = True
            yield raw
            continue
        parsed, problems = map_row(raw, mapping, index, limits)
        if parsed is None:
            had_problems = True
            yield from problems
            continue
        index += 1
        yield parsed
    if file_format == "csv" and not header_checked:
        # A header and no rows.
        check_columns_exist(mapping, columns, header=True)
        raise ParseError("The file has a header but no rows.")
    if file_format != "csv" and not had_problems:
        # Unreadable rows may have held the column; their problems are reported instead.
        check_columns_exist(mapping, columns, header=False)


def preview_rows(
    binary: BinaryIO,
    *,
    file_format: FileFormat,
    limit: int = PREVIEW_ROWS,
    limits: Limits | None = None,
) -> Preview:
    """The columns and first rows of a file, and a suggested mapping. Raises ParseError.

    Long text values are cut to PREVIEW_CELL_CHARS, so the preview of rows near the
    row limit stays small.
    """
    columns: list[str] = []
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for raw in iter_raw_rows(binary, file_format, columns, limits):
        if isinstance(raw, Problem):
            problems.append(raw)
        else:
            rows.append(
                {
                    k: v[:PREVIEW_CELL_CHARS] if isinstance(v, str) else v
                    for k, v in raw.values.items()
                }
            )
        if len(rows) + len(problems) >= limit:
            break
    if not rows and not problems and file_format == "csv":
        raise ParseError("The file has a header but no rows.")
    return Preview(
        columns=list(columns),
        rows=rows,
        file_format=file_format,
        mapping=suggest_mapping(columns, rows),
        problems=problems,
    )
