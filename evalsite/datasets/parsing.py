"""Streamed parsing of uploaded dataset files (CSV, JSON Lines, JSON array).

No Django in here: the services feed these generators a binary file object and insert
what comes out in batches. Memory stays bounded by the largest single row: files are
read in chunks, never whole, and rows are yielded one at a time.

Errors come in two kinds:
- `ParseError`: the file as a whole cannot be read (not UTF-8, empty, broken JSON array,
  bad header). Parsing stops.
- `Problem` values yielded in place of a row (malformed JSONL line, non-object row, a
  context that is not a list of strings, ...). Parsing goes on so the caller can list
  the first few problems together.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

import ijson

FileFormat = Literal["csv", "jsonl", "json"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "json")
ContextFormat = Literal["json", "delimited"]

PREVIEW_ROWS = 10
CHUNK_BYTES = 1 << 20
# Delimiters the CSV sniffer may choose from; anything else is almost always a mis-guess.
CSV_DELIMITERS = ",;\t|"
# Enough lines for csv.Sniffer to see a pattern without reading a huge file.
_SNIFF_MAX_CHARS = 64 * 1024
_SNIFF_MAX_LINES = 50
# A JSON dataset whose rows all have different keys must not grow `columns` forever.
_MAX_TRACKED_COLUMNS = 500
# JSON may spell NUL as an escape; Postgres text and jsonb cannot store it.
_NUL_ESCAPE = "\\u0000"

_EXTENSIONS: dict[str, FileFormat] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
}

# Column names suggested for each field, best first (compared case-insensitively).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "input": ("input", "question", "query", "prompt", "user_input"),
    "output": (
        "output",
        "answer",
        "response",
        "actual_output",
        "completion",
        "model_output",
    ),
    "context": (
        "context",
        "contexts",
        "retrieval_context",
        "retrieved_context",
        "documents",
        "chunks",
    ),
    "reference": (
        "reference",
        "expected_output",
        "expected",
        "ground_truth",
        "reference_answer",
        "ideal",
    ),
}

# Allow fields of any size (long retrieved contexts); the upload size limit bounds them.
try:
    csv.field_size_limit(sys.maxsize)
except OverflowError:  # pragma: no cover - 32-bit C long
    csv.field_size_limit(2**31 - 1)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one row. `row` is the 1-based data row (the CSV header is not
    a row); `line` the 1-based line in the file where known."""

    message: str
    row: int | None = None
    column: str | None = None
    line: int | None = None

    @property
    def field(self) -> str:
        parts = []
        if self.row is not None:
            parts.append(f"row {self.row}")
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.column:
            parts.append(f"column {self.column}")
        return ", ".join(parts) or "file"

    def as_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "line": self.line,
            "column": self.column,
            "field": self.field,
            "message": self.message,
        }


class ParseError(Exception):
    """The file cannot be read at all; nothing in it can be imported."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or [Problem(message)]


@dataclass(frozen=True)
class Mapping:
    """Which file column feeds which item field; every other column goes to metadata."""

    input: str
    output: str
    context: str | None = None
    reference: str | None = None
    context_format: ContextFormat = "json"
    context_delimiter: str = "\n"

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "context": self.context,
            "reference": self.reference,
            "context_format": self.context_format,
            "context_delimiter": self.context_delimiter,
        }

    @property
    def mapped_columns(self) -> set[str]:
        return {c for c in (self.input, self.output, self.context, self.reference) if c}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Mapping:
        """Validate a user-given mapping (form or API JSON). Raises ParseError."""
        if not isinstance(data, dict):
            raise ParseError(
                "The mapping must be a JSON object like "
                '{"input": "question", "output": "answer"}.'
            )
        allowed = {
            "input",
            "output",
            "context",
            "reference",
            "context_format",
            "context_delimiter",
        }
        unknown = sorted(set(data) - allowed)
        problems = [
            Problem(
                f"Unknown mapping key {key!r}; allowed: {', '.join(sorted(allowed))}.",
                column=key,
            )
            for key in unknown
        ]
        values: dict[str, Any] = {}
        for key in ("input", "output", "context", "reference"):
            value = data.get(key)
            if value in (None, ""):
                values[key] = None
            elif isinstance(value, str):
                values[key] = value
            else:
                problems.append(
                    Problem(f"The {key} mapping must be a column name.", column=key)
                )
        for key in ("input", "output"):
            if key in values and values[key] is None:
                problems.append(
                    Problem(f"Choose the column that holds the {key}.", column=key)
                )
        context_format = data.get("context_format") or "json"
        if context_format not in ("json", "delimited"):
            problems.append(
                Problem(
                    'context_format must be "json" or "delimited".',
                    column="context_format",
                )
            )
        delimiter = data.get("context_delimiter")
        if delimiter in (None, ""):
            delimiter = "\n"
        if not isinstance(delimiter, str):
            problems.append(
                Problem("context_delimiter must be text.", column="context_delimiter")
            )
        elif context_format == "delimited" and not delimiter.strip(" "):
            problems.append(
                Problem(
                    "context_delimiter cannot be only spaces.",
                    column="context_delimiter",
                )
            )
        if problems:
            raise ParseError(problems[0].message, problems)
        return cls(
            input=values["input"],
            output=values["output"],
            context=values["context"],
            reference=values["reference"],
            context_format=context_format,
            context_delimiter=unescape_delimiter(delimiter),
        )


def unescape_delimiter(value: str) -> str:
    r"""Let users type `\n` or `\t` in a one-line form field."""
    return value.replace("\\n", "\n").replace("\\t", "\t")


def escape_delimiter(value: str) -> str:
    return value.replace("\n", "\\n").replace("\t", "\\t")


@dataclass
class ParsedRow:
    """One item ready to store. `index` is the 0-based position among the items."""

    index: int
    input: str
    output: str
    context: list[str]
    reference: str
    metadata: dict[str, Any]


@dataclass
class RawRow:
    row: int
    line: int | None
    values: dict[str, Any]


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
        if override not in FORMATS:
            raise ParseError(
                f"Unknown format {override!r}; choose one of {', '.join(FORMATS)}."
            )
        return override  # type: ignore[return-value]
    ext = os.path.splitext(filename or "")[1].lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"[":
        return "json"
    if first == b"{":
        return "jsonl"
    return "csv"


# ---------------------------------------------------------------- reading bytes


class _NotUtf8(ParseError):
    pass


def _utf8_chunks(binary: BinaryIO) -> Iterator[tuple[bytes, str]]:
    """Yield (bytes, text) chunks of the file, validated as UTF-8, without a leading BOM.

    An incremental decoder (rather than io.TextIOWrapper) so that the first bad byte can
    be reported by its offset and line in the file.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0  # bytes read before the current chunk
    newlines = 0
    first = True
    while True:
        chunk = binary.read(CHUNK_BYTES)
        final = not chunk
        if first and chunk:
            # A BOM split across reads is not worth handling: reads are >= 3 bytes here.
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
                offset += len(codecs.BOM_UTF8)
            first = False
        try:
            text = decoder.decode(chunk, final)
        except UnicodeDecodeError as exc:
            # The decoder prepends bytes it held back from the previous chunk.
            held = len(exc.object) - len(chunk)
            position = offset - held + exc.start
            line = newlines + exc.object[: exc.start].count(b"\n") + 1
            bad = exc.object[exc.start : exc.start + 1].hex()
            raise _NotUtf8(
                f"The file is not UTF-8: byte 0x{bad} at byte {position} (line {line}) "
                "cannot be decoded. Save the file as UTF-8 and upload it again.",
                [Problem(f"Not UTF-8: byte 0x{bad} at byte {position}.", line=line)],
            ) from None
        if "\x00" in text:
            # Postgres cannot store NUL, and NULs in "valid UTF-8" mean UTF-16 or binary.
            line = newlines + text[: text.index("\x00")].count("\n") + 1
            raise ParseError(
                f"The file contains a NUL byte (line {line}): it looks like UTF-16 or a "
                "binary file. Save it as UTF-8 text and upload it again.",
                [Problem("NUL byte: not UTF-8 text.", line=line)],
            )
        newlines += text.count("\n")
        offset += len(chunk)
        if text or chunk:
            yield chunk, text
        if final:
            return


def _lines(chunks: Iterable[tuple[bytes, str]]) -> Iterator[str]:
    """Lines with their line ends kept (csv needs them for quoted newlines).

    Only "\\n" ends a line ("\\r\\n" keeps its "\\r", which csv and json both accept);
    str.splitlines would also split on form feeds and Unicode separators inside fields.
    """
    rest = ""
    for _, text in chunks:
        if not text:
            continue
        parts = (rest + text).split("\n")
        rest = parts.pop()
        for part in parts:
            yield part + "\n"
    if rest:
        yield rest


# ---------------------------------------------------------------- row sources


def iter_raw_rows(
    binary: BinaryIO, file_format: FileFormat, columns: list[str]
) -> Iterator[RawRow | Problem]:
    """Yield the file's rows as dicts (or a Problem for a row that cannot be read).

    `columns` is filled in as columns are discovered (the CSV header at once; JSON keys
    in order of first appearance). Raises ParseError when the file cannot be read.
    """
    chunks = _utf8_chunks(binary)
    if file_format == "csv":
        return _csv_rows(chunks, columns)
    if file_format == "jsonl":
        return _jsonl_rows(chunks, columns)
    return _json_array_rows(chunks, columns)


def _sniff_delimiter(sample: str, header: str) -> str:
    try:
        delimiter = csv.Sniffer().sniff(sample, delimiters=CSV_DELIMITERS).delimiter
    except csv.Error:
        delimiter = ""
    if (
        len(delimiter) != 1
        or delimiter not in CSV_DELIMITERS
        or delimiter not in header
    ):
        # The sniffer gives up (or guesses wrong) on one-line files and ragged text; the
        # header line is the most regular line there is.
        counts = {d: header.count(d) for d in CSV_DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        delimiter = best if counts[best] else ","
    return delimiter


def _csv_rows(
    chunks: Iterator[tuple[bytes, str]], columns: list[str]
) -> Iterator[RawRow | Problem]:
    lines = _lines(chunks)
    sample_lines: list[str] = []
    size = 0
    for line in lines:
        sample_lines.append(line)
        size += len(line)
        if size >= _SNIFF_MAX_CHARS or len(sample_lines) >= _SNIFF_MAX_LINES:
            break
    if not any(line.strip() for line in sample_lines):
        raise ParseError("The file is empty: no header and no rows.")
    header_line = next(line for line in sample_lines if line.strip())
    delimiter = _sniff_delimiter("".join(sample_lines)[:_SNIFF_MAX_CHARS], header_line)

    def all_lines() -> Iterator[str]:
        yield from sample_lines
        yield from lines

    reader = csv.reader(all_lines(), delimiter=delimiter, quotechar='"', strict=False)
    header: list[str] | None = None
    row_number = 0
    try:
        for record in reader:
            if not record or all(not cell.strip() for cell in record):
                continue  # blank line
            if header is None:
                header = _clean_header(record)
                columns.extend(header)
                continue
            row_number += 1
            if len(record) > len(header):
                yield Problem(
                    f"This row has {len(record)} fields but the header has {len(header)} "
                    f"(is a field with a {_delimiter_name(delimiter)} missing its quotes?).",
                    row=row_number,
                    line=reader.line_num,
                )
                continue
            # Short rows are common (trailing empty cells trimmed by editors): pad them.
            values = dict(zip(header, record, strict=False))
            for name in header[len(record) :]:
                values[name] = ""
            yield RawRow(row=row_number, line=reader.line_num, values=values)
    except csv.Error as exc:
        raise ParseError(
            f"The CSV cannot be read near line {reader.line_num}: {exc}.",
            [Problem(f"CSV error: {exc}.", line=reader.line_num)],
        ) from None
    if header is None:
        raise ParseError("The file is empty: no header and no rows.")


def _delimiter_name(delimiter: str) -> str:
    return {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}.get(
        delimiter, repr(delimiter)
    )


def _clean_header(record: list[str]) -> list[str]:
    header = []
    problems = []
    seen: set[str] = set()
    for i, raw in enumerate(record):
        name = raw.strip() or f"column_{i + 1}"
        if name in seen:
            problems.append(
                Problem(
                    f"Column name {name!r} appears twice in the header.", column=name
                )
            )
        seen.add(name)
        header.append(name)
    if problems:
        raise ParseError(problems[0].message, problems)
    return header


def _track_columns(columns: list[str], known: set[str], values: dict[str, Any]) -> None:
    if len(known) >= _MAX_TRACKED_COLUMNS:
        return
    for key in values:
        if key not in known:
            known.add(key)
            columns.append(key)


def _jsonl_rows(
    chunks: Iterator[tuple[bytes, str]], columns: list[str]
) -> Iterator[RawRow | Problem]:
    known: set[str] = set()
    row_number = 0
    for line_number, line in enumerate(_lines(chunks), start=1):
        if not line.strip():
            continue
        row_number += 1
        if _NUL_ESCAPE in line:
            yield Problem(
                f"Line {line_number} contains a \\u0000 (NUL) character, which cannot be stored.",
                row=row_number,
                line=line_number,
            )
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Problem(
                f"Line {line_number} is not valid JSON: {exc.msg} (column {exc.colno}).",
                row=row_number,
                line=line_number,
            )
            continue
        if not isinstance(value, dict):
            yield Problem(
                f"Line {line_number} is a JSON {_json_type(value)}, not an object.",
                row=row_number,
                line=line_number,
            )
            continue
        _track_columns(columns, known, value)
        yield RawRow(row=row_number, line=line_number, values=value)
    if row_number == 0:
        raise ParseError("The file is empty: no JSON lines found.")


def _json_array_rows(
    chunks: Iterator[tuple[bytes, str]], columns: list[str]
) -> Iterator[RawRow | Problem]:
    """Stream the elements of a top-level JSON array with ijson's push interface."""
    known: set[str] = set()
    # items_coro appends finished elements to the sendable list we pass in.
    sink: Any = ijson.sendable_list()
    coro = ijson.items_coro(sink, "item", use_float=True)
    row_number = 0
    started = False
    tail = b""  # an escape may straddle two chunks
    for raw, _ in chunks:
        if not started:
            stripped = raw.lstrip(b" \t\r\n")
            if not stripped:
                continue
            if not stripped.startswith(b"["):
                raise ParseError(
                    "A .json dataset must be one JSON array of objects, like "
                    '[{"input": ..., "output": ...}, ...]. For one object per line, '
                    "use the JSON Lines format (.jsonl)."
                )
            started = True
        if _NUL_ESCAPE.encode() in tail + raw:
            raise ParseError(
                "The JSON contains a \\u0000 (NUL) character, which cannot be stored.",
                [Problem("\\u0000 (NUL) character.", row=row_number + len(sink) + 1)],
            )
        tail = raw[-8:]
        try:
            coro.send(raw)
        except ijson.JSONError as exc:
            # Elements completed earlier in this chunk are still in the sink.
            raise _json_syntax_error(exc, row_number + len(sink)) from None
        items = list(sink)
        del sink[:]
        for value in items:
            row_number += 1
            if not isinstance(value, dict):
                yield Problem(
                    f"Element {row_number} of the array is a JSON {_json_type(value)}, "
                    "not an object.",
                    row=row_number,
                )
                continue
            _track_columns(columns, known, value)
            yield RawRow(row=row_number, line=None, values=value)
    if not started:
        raise ParseError("The file is empty: no JSON array found.")
    try:
        coro.close()
    except ijson.JSONError as exc:
        raise _json_syntax_error(exc, row_number + len(sink)) from None
    for value in sink:
        # Elements completed by the final flush.
        row_number += 1
        if isinstance(value, dict):
            _track_columns(columns, known, value)
            yield RawRow(row=row_number, line=None, values=value)
        else:
            yield Problem(
                f"Element {row_number} of the array is a JSON {_json_type(value)}, not an object.",
                row=row_number,
            )
    if row_number == 0:
        raise ParseError("The file is empty: the JSON array has no rows.")


def _json_syntax_error(exc: Exception, rows_read: int) -> ParseError:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
    return ParseError(
        f"The JSON is malformed after element {rows_read} of the array: {detail}",
        [Problem(f"Malformed JSON: {detail}", row=rows_read + 1)],
    )


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


# ---------------------------------------------------------------- mapping


def suggest_mapping(
    columns: list[str], rows: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A default mapping: exact names first, then common synonyms (case-insensitive)."""
    by_lower: dict[str, str] = {}
    for name in columns:
        by_lower.setdefault(name.lower().strip(), name)
    mapping: dict[str, Any] = {}
    used: set[str] = set()
    for target, names in _SYNONYMS.items():
        mapping[target] = None
        for candidate in names:
            column = by_lower.get(candidate)
            if column is not None and column not in used:
                mapping[target] = column
                used.add(column)
                break
    mapping["context_format"] = "json"
    mapping["context_delimiter"] = "\n"
    context = mapping["context"]
    if context and rows:
        sample = [r.get(context) for r in rows if r.get(context) not in (None, "")]
        if sample and all(
            isinstance(v, str) and not v.lstrip().startswith("[") for v in sample
        ):
            mapping["context_format"] = "delimited"
            if all("||" in v for v in sample):
                mapping["context_delimiter"] = "||"
            elif any("\n\n" in v for v in sample):
                mapping["context_delimiter"] = "\n\n"
    return mapping


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _context_list(
    value: Any, mapping: Mapping, row: RawRow
) -> tuple[list[str] | None, Problem | None]:
    column = mapping.context
    if value is None or value == "":
        return [], None
    if mapping.context_format == "delimited" and isinstance(value, str):
        chunks = [c.strip() for c in value.split(mapping.context_delimiter)]
        return [c for c in chunks if c], None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return None, Problem(
                f"Context is not valid JSON ({exc.msg}); expected a JSON list of strings "
                'like ["chunk one", "chunk two"], or choose the "delimited" context format.',
                row=row.row,
                column=column,
                line=row.line,
            )
    if not isinstance(value, list):
        return None, Problem(
            f"Context is a JSON {_json_type(value)}, not a list of strings.",
            row=row.row,
            column=column,
            line=row.line,
        )
    for position, chunk in enumerate(value, start=1):
        if not isinstance(chunk, str):
            return None, Problem(
                f"Context element {position} is a JSON {_json_type(chunk)}, not a string.",
                row=row.row,
                column=column,
                line=row.line,
            )
    return value, None


def map_row(
    raw: RawRow, mapping: Mapping, index: int
) -> tuple[ParsedRow | None, list[Problem]]:
    values = raw.values
    problems = []
    for target in ("input", "output"):
        column = getattr(mapping, target)
        if column not in values:
            problems.append(
                Problem(
                    f"The {target} column {column!r} is missing from this row.",
                    row=raw.row,
                    column=column,
                    line=raw.line,
                )
            )
    context: list[str] | None = []
    if mapping.context:
        context, problem = _context_list(values.get(mapping.context), mapping, raw)
        if problem:
            problems.append(problem)
    if problems:
        return None, problems
    metadata: dict[str, Any] = {}
    mapped = mapping.mapped_columns
    nested = values.get("metadata")
    if "metadata" not in mapped and isinstance(nested, dict):
        # A JSON row's own "metadata" object is the metadata, not one key of it.
        metadata.update(nested)
    for key, value in values.items():
        if key in mapped or (key == "metadata" and isinstance(nested, dict)):
            continue
        metadata[key] = value
    return (
        ParsedRow(
            index=index,
            input=_as_text(values.get(mapping.input)),
            output=_as_text(values.get(mapping.output)),
            context=context or [],
            reference=_as_text(values.get(mapping.reference))
            if mapping.reference
            else "",
            metadata=metadata,
        ),
        [],
    )


def parse_rows(
    binary: BinaryIO,
    *,
    file_format: FileFormat,
    mapping: Mapping,
    columns: list[str] | None = None,
) -> Iterator[ParsedRow | Problem]:
    """Yield mapped rows, or Problems in their place. Raises ParseError on a fatal error.

    A mapped column that exists in no row at all is reported at the end (CSV: at once,
    from the header) so that a typo in the mapping is named, not silently imported empty.
    """
    columns = [] if columns is None else columns
    index = 0
    header_checked = False
    had_problems = False
    for raw in iter_raw_rows(binary, file_format, columns):
        if file_format == "csv" and not header_checked:
            header_checked = True
            _check_columns_exist(mapping, columns, header=True)
        if isinstance(raw, Problem):
            had_problems = True
            yield raw
            continue
        parsed, problems = map_row(raw, mapping, index)
        if parsed is None:
            had_problems = True
            yield from problems
            continue
        index += 1
        yield parsed
    if file_format == "csv" and not header_checked:
        # A header and no rows.
        _check_columns_exist(mapping, columns, header=True)
        raise ParseError("The file has a header but no rows.")
    if file_format != "csv" and not had_problems:
        # Unreadable rows may have held the column; their problems are reported instead.
        _check_columns_exist(mapping, columns, header=False)


def _check_columns_exist(mapping: Mapping, columns: list[str], *, header: bool) -> None:
    if not header and len(columns) >= _MAX_TRACKED_COLUMNS:
        return
    present = set(columns)
    problems = []
    for target in ("input", "output", "context", "reference"):
        column = getattr(mapping, target)
        if column and column not in present:
            where = "in the CSV header" if header else "in any row"
            problems.append(
                Problem(
                    f"The {target} column {column!r} is not {where}. "
                    f"Columns found: {', '.join(columns) or 'none'}.",
                    column=column,
                )
            )
    if problems:
        kind = "CSV" if header else "file"
        raise ParseError(
            f"The {kind} has no column {problems[0].column!r} (mapped to "
            f"{_target_of(mapping, problems[0].column)}).",
            problems,
        )


def _target_of(mapping: Mapping, column: str | None) -> str:
    for target in ("input", "output", "context", "reference"):
        if getattr(mapping, target) == column:
            return target
    return "?"


def preview_rows(
    binary: BinaryIO, *, file_format: FileFormat, limit: int = PREVIEW_ROWS
) -> Preview:
    """The columns and first rows of a file, and a suggested mapping. Raises ParseError."""
    columns: list[str] = []
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for raw in iter_raw_rows(binary, file_format, columns):
        if isinstance(raw, Problem):
            problems.append(raw)
        else:
            rows.append(raw.values)
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
