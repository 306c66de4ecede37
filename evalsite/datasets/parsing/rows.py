"""Streamed parsing of uploaded dataset files (CSV, JSON Lines, JSON array).

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

Text the database cannot store (NUL, unpaired surrogates: the rule in
evalsite.lib.text) is refused with its row and column, never cleaned. Bytes that are
not UTF-8 are decoded with "surrogateescape", so each one reaches its cell as a lone
surrogate and is reported there, with its row and column, as not UTF-8.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal, NoReturn, TypeGuard

from evalsite.datasets.agentdata import (
    AGENT_FIELDS,
    JSON_FIELDS,
    LABELS,
    AgentDataError,
    agent_text,
    agent_value,
    shape_of,
)
from evalsite.lib.text import unstorable_char, unstorable_in

FileFormat = Literal["csv", "jsonl", "json"]
FORMATS: tuple[FileFormat, ...] = ("csv", "jsonl", "json")


def is_file_format(value: str) -> TypeGuard[FileFormat]:
    return value in FORMATS


ContextFormat = Literal["json", "delimited"]

PREVIEW_ROWS = 10
# Longer text values are cut in the preview (it shows 160 characters of a cell).
PREVIEW_CELL_CHARS = 2000
CHUNK_BYTES = 1 << 20
# Delimiters the CSV sniffer may choose from; anything else is almost always a mis-guess.
CSV_DELIMITERS = ",;\t|"
# Enough lines for csv.Sniffer to see a pattern without reading a huge file.
_SNIFF_MAX_CHARS = 64 * 1024
_SNIFF_MAX_LINES = 50
# A JSON dataset whose rows all have different keys must not grow `columns` forever,
# and a CSV header may have no more (the mapping page lists every column). A row (its
# keys, JSON) and an item's metadata (the unmapped columns and a row's own "metadata"
# object, uploads and imports alike) may have no more either: one JSON row of 200,000
# keys took the mapping page 4 minutes and 1 GB, and its dataset page 10 MB of HTML.
MAX_COLUMNS = 500
_MAX_TRACKED_COLUMNS = MAX_COLUMNS
# Column names are shown in table headers and kept in Dataset.columns.
MAX_COLUMN_NAME_CHARS = 1000
# A row may hold this many full-size cells, plus room for its keys and punctuation.
ROW_CELLS = 4
_ROW_SLACK_CHARS = 64 * 1024
# Longer integers are refused: far beyond any real value, and Python will not convert
# an integer of more than 4,300 digits to text.
_MAX_INT_DIGITS = 1000

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
    # Agent data: only the fields' own names, so that a column such as "messages" or
    # DeepEval's "tools_called" (calls of another shape) stays metadata unless mapped.
    "system_prompt": ("system_prompt",),
    "conversation": ("conversation",),
    "tool_calls": ("tool_calls",),
    "expected_tool_calls": ("expected_tool_calls",),
    "expected_trajectory": ("expected_trajectory",),
    "baseline_output": ("baseline_output",),
}
# Every item field a column can be mapped to, in the order messages list them.
TARGETS = ("input", "output", "context", "reference", *AGENT_FIELDS)

# Allow fields of any size (long retrieved contexts); the upload size limit bounds them.
try:
    csv.field_size_limit(sys.maxsize)
except OverflowError:  # pragma: no cover - 32-bit C long
    csv.field_size_limit(2**31 - 1)


@dataclass(frozen=True)
class Limits:
    """How deep and how large one row may be (settings DATASET_MAX_NESTING and
    DATASET_MAX_CELL_CHARS; the defaults here are theirs).

    They bound what reading one row can cost. Nesting is counted on the text before
    anything is built: json.loads recurses once per level (1,000 levels raised
    RecursionError) and ijson's item builder kept a path per level (a 200 KB file nested
    100,000 deep took 23 GB). A row is refused, unread, once it passes `max_row_chars`;
    a cell is measured in characters (a JSON value as its compact JSON text).
    """

    max_nesting: int = 32
    max_cell_chars: int = 1_000_000

    @property
    def max_row_chars(self) -> int:
        return ROW_CELLS * self.max_cell_chars + _ROW_SLACK_CHARS


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
    # Agent data (see agentdata): a column each, or None.
    system_prompt: str | None = None
    conversation: str | None = None
    tool_calls: str | None = None
    expected_tool_calls: str | None = None
    expected_trajectory: str | None = None
    baseline_output: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "context": self.context,
            "reference": self.reference,
            "context_format": self.context_format,
            "context_delimiter": self.context_delimiter,
            **{key: getattr(self, key) for key in AGENT_FIELDS},
        }

    @property
    def mapped_columns(self) -> set[str]:
        return {c for c in (getattr(self, t) for t in TARGETS) if c}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Mapping:
        """Validate a user-given mapping (form or API JSON). Raises ParseError."""
        if not isinstance(data, dict):
            raise ParseError(
                "The mapping must be a JSON object like "
                '{"input": "question", "output": "answer"}.'
            )
        allowed = {*TARGETS, "context_format", "context_delimiter"}
        unknown = sorted(set(data) - allowed)
        problems = [
            Problem(
                f"Unknown mapping key {key!r}; allowed: {', '.join(sorted(allowed))}.",
                column=key,
            )
            for key in unknown
        ]
        values: dict[str, Any] = {}
        for key in TARGETS:
            value = data.get(key)
            if value in (None, ""):
                values[key] = None
            elif isinstance(value, str):
                values[key] = value
            else:
                problems.append(
                    Problem(f"The {key} mapping must be a column name.", column=key)
                )
        # The mapping is stored with the dataset: refuse what the database would.
        for key in (*values, "context_delimiter"):
            value = data.get(key)
            found = unstorable_char(value) if isinstance(value, str) else None
            if found:
                problems.append(
                    Problem(f"Contains {found}, which cannot be stored.", column=key)
                )
        for key in ("input", "output"):
            if key in values and values[key] is None:
                problems.append(
                    Problem(f"Choose the column that holds the {key}.", column=key)
                )
        raw_format = data.get("context_format") or "json"
        context_format: ContextFormat = (
            "delimited" if raw_format == "delimited" else "json"
        )
        if raw_format not in ("json", "delimited"):
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
            **{key: values[key] for key in AGENT_FIELDS},
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
    # The row's size in the file, in characters: the services batch inserts by it.
    chars: int = field(default=0, compare=False)
    # Agent data: "" / None when the row has none (None, not [], so that "no expected
    # tool calls given" differs from "expected to call no tool").
    system_prompt: str = ""
    conversation: list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    expected_tool_calls: list[Any] | None = None
    expected_trajectory: list[Any] | None = None
    baseline_output: str = ""


@dataclass
class RawRow:
    row: int
    line: int | None
    values: dict[str, Any]
    chars: int = 0


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


# ---------------------------------------------------------------- messages


def _printable(name: str) -> str:
    """A column name fit for a message: characters that do not print are escaped."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _not_utf8(char: str) -> str:
    return (
        f"Byte 0x{ord(char) - 0xDC00:02X} is not UTF-8: the file is probably in another "
        "encoding (such as Windows-1252). Save it as UTF-8 and upload it again."
    )


def _unstorable(found: str) -> str:
    return f"Contains {found}, which cannot be stored; remove it and upload the file again."


def _too_deep(limits: Limits) -> str:
    return (
        f"This value is nested more than {limits.max_nesting} levels deep (counting the "
        "row itself); flatten it, or store it as a JSON string."
    )


def _cell_too_large(chars: int, limits: Limits) -> str:
    return (
        f"This cell is {chars:,} characters long; a cell may hold at most "
        f"{limits.max_cell_chars:,}."
    )


def _row_too_large(limits: Limits) -> str:
    return (
        f"This row is over {limits.max_row_chars:,} characters long; a cell may hold at "
        f"most {limits.max_cell_chars:,} characters."
    )


def _text_problem(text: str) -> str | None:
    """Why a CSV cell or a column name cannot be stored, or None.

    lib.text's rule decides; a lone surrogate in raw text can only be a byte that was
    not UTF-8 (see _text_chunks), so that one is named as such.
    """
    found = unstorable_char(text)
    if found is None:
        return None
    bad = _UNDECODABLE.search(text)
    return _not_utf8(bad.group()) if bad else _unstorable(found)


# ---------------------------------------------------------------- reading text

# Bytes that are not UTF-8 decode to these with "surrogateescape"; valid UTF-8 never does.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
# Matches the empty string too, so .match() never gives None (the type: ignores where
# it is used say so to mypy without a check in the reading loop).
_JSON_SPACE = re.compile(r"[ \t\r\n]*+")


class _LongLine:
    """In place of a line over the row limit: only its first `max_chars` are kept."""

    __slots__ = ("head",)

    def __init__(self, head: str) -> None:
        self.head = head


def _refuse_utf16_or_binary(head: bytes) -> None:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ParseError(
            "The file is UTF-16 or UTF-32 (it starts with that byte order mark). Save it "
            "as UTF-8 and upload it again."
        )
    sample = head[:4096]
    nuls = sample.count(b"\x00")
    # UTF-16 text is half NUL bytes; one stray NUL in a cell is reported in its cell.
    if nuls and nuls * 8 >= len(sample):
        line = sample[: sample.index(b"\x00")].count(b"\n") + 1
        raise ParseError(
            f"The file contains NUL bytes (line {line}): it looks like UTF-16 or a "
            "binary file. Save it as UTF-8 text and upload it again.",
            [Problem("NUL bytes: not UTF-8 text.", line=line)],
        )


def _text_chunks(binary: BinaryIO) -> Iterator[str]:
    """The file as text chunks, without a leading UTF-8 BOM.

    Decoded with "surrogateescape": a byte that is not UTF-8 becomes a lone surrogate
    (U+DC80..U+DCFF) in its cell, where lib.text's rule refuses it with the row and
    column, rather than stopping the whole file at a byte offset.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    first = True
    while True:
        chunk = binary.read(CHUNK_BYTES)
        if first:
            first = False
            _refuse_utf16_or_binary(chunk)
            # A BOM split across reads is not worth handling: reads are >= 3 bytes here.
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
        text = decoder.decode(chunk, not chunk)
        if text:
            yield text
        if not chunk:
            return


def _lines(texts: Iterable[str], max_chars: int) -> Iterator[str | _LongLine]:
    """Lines with their line ends kept (csv needs them for quoted newlines).

    Only "\\n" ends a line ("\\r\\n" keeps its "\\r", which csv and json both accept);
    str.splitlines would also split on form feeds and Unicode separators inside fields.
    A line longer than `max_chars` is dropped as it is read and yielded as a _LongLine.
    """
    pending: list[str] = []  # the start of a line that runs past the current chunk
    pending_chars = 0
    dropping = False
    for text in texts:
        parts = text.split("\n")
        tail = parts.pop()
        for part in parts:
            if pending or dropping:
                if dropping or pending_chars + len(part) > max_chars:
                    yield _LongLine("".join(pending))
                else:
                    pending.append(part)
                    yield "".join(pending) + "\n"
                pending, pending_chars, dropping = [], 0, False
            elif len(part) > max_chars:
                yield _LongLine(part[:max_chars])
            else:
                yield part + "\n"
        if tail and not dropping:
            if pending_chars + len(tail) > max_chars:
                pending.append(tail[: max_chars - pending_chars])
                dropping = True
            else:
                pending.append(tail)
                pending_chars += len(tail)
    if dropping:
        yield _LongLine("".join(pending))
    elif pending:
        yield "".join(pending)


# ---------------------------------------------------------------- row sources


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
    texts = _text_chunks(binary)
    if file_format == "csv":
        return _csv_rows(texts, columns, limits)
    if file_format == "jsonl":
        return _jsonl_rows(texts, columns, limits)
    return _json_array_rows(texts, columns, limits)


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


# Fed to the csv reader after the last line. If a quoted field is still open, its quote
# closes it and the mark ends that field; otherwise it is a record of its own. The file
# cannot contain it: surrogateescape only produces U+DC80..U+DCFF.
_EOF_MARK = "\udfff"
_EOF_LINE = '"' + _EOF_MARK


class _CsvFeed:
    """The lines the csv reader reads, counted per record.

    csv.reader pulls one line at a time and returns a record as soon as it is complete,
    so what is counted between two records is one record's lines. A record past the row
    limit (a quote never closed swallows the rest of the file) stops the file here,
    before the csv module holds it.
    """

    def __init__(self, lines: Iterable[str | _LongLine], limits: Limits) -> None:
        self._lines = lines
        self._limits = limits
        self.line = 0  # lines read so far
        self.rows = 0  # data rows finished so far
        self.header_done = False
        self.start = 1  # first line of the record being read
        self.chars = 0  # characters of the record being read
        self.unstorable = False  # whether the record has text the database refuses

    def __iter__(self) -> Iterator[str]:
        for text in self._lines:
            self.line += 1
            if isinstance(text, _LongLine):
                self._refuse()
            self.chars += len(text)
            if self.chars > self._limits.max_row_chars:
                self._refuse()
            if (
                not self.unstorable
                and (not text.isascii() or "\x00" in text)
                and unstorable_char(text)
            ):
                self.unstorable = True
            yield text
        yield _EOF_LINE

    def next_record(self) -> None:
        self.start = self.line + 1
        self.chars = 0
        self.unstorable = False

    def _refuse(self) -> NoReturn:
        hint = (
            "; is a quoted field missing its closing quote?"
            if self.line > self.start
            else "."
        )
        if not self.header_done:
            where, row = f"The header (from line {self.start})", None
        else:
            where, row = f"Row {self.rows + 1} (from line {self.start})", self.rows + 1
        message = (
            f"{where} is over {self._limits.max_row_chars:,} characters long; a cell may "
            f"hold at most {self._limits.max_cell_chars:,} characters{hint}"
        )
        raise ParseError(message, [Problem(message, row=row, line=self.start)])


def _csv_rows(
    texts: Iterator[str], columns: list[str], limits: Limits
) -> Iterator[RawRow | Problem]:
    lines = _lines(texts, limits.max_row_chars)
    sample_lines: list[str | _LongLine] = []
    size = 0
    for line in lines:
        sample_lines.append(line)
        if isinstance(line, _LongLine):
            break  # the feed refuses it in order
        size += len(line)
        if size >= _SNIFF_MAX_CHARS or len(sample_lines) >= _SNIFF_MAX_LINES:
            break
    sample = [line for line in sample_lines if isinstance(line, str)]
    if len(sample) == len(sample_lines) and not any(line.strip() for line in sample):
        raise ParseError("The file is empty: no header and no rows.")
    header_line = next((line for line in sample if line.strip()), "")
    delimiter = _sniff_delimiter("".join(sample)[:_SNIFF_MAX_CHARS], header_line)

    feed = _CsvFeed(itertools.chain(sample_lines, lines), limits)
    reader = csv.reader(iter(feed), delimiter=delimiter, quotechar='"', strict=False)
    header: list[str] | None = None
    try:
        for record in reader:
            start, chars, unstorable = feed.start, feed.chars, feed.unstorable
            feed.next_record()
            if record == [_EOF_MARK]:
                continue  # the end of the file, outside any quotes
            if record and record[-1].endswith(_EOF_MARK):
                yield _unclosed_quote(header, record, feed.rows + 1, start)
                break
            if not record or all(not cell.strip() for cell in record):
                continue  # blank line
            if header is None:
                header = _clean_header(record, start)
                columns.extend(header)
                feed.header_done = True
                continue
            feed.rows += 1
            row = feed.rows
            if len(record) != len(header):
                hint = (
                    f"is a field with a {_delimiter_name(delimiter)} missing its quotes?"
                    if len(record) > len(header)
                    else "every row needs a field for every column, even an empty one"
                )
                yield Problem(
                    f"This row has {len(record)} fields but the header has "
                    f"{len(header)} ({hint}).",
                    row=row,
                    line=reader.line_num,
                )
                continue
            if unstorable or chars > limits.max_cell_chars:
                problem = _csv_cell_problem(header, record, limits)
                if problem is not None:
                    message, column = problem
                    yield Problem(message, row=row, column=column, line=start)
                    continue
            yield RawRow(
                row=row,
                line=reader.line_num,
                values=dict(zip(header, record, strict=True)),
                chars=chars,
            )
    except csv.Error as exc:
        error_row = feed.rows + 1 if feed.header_done else None
        detail = str(exc).rstrip(".?")
        if "new-line character seen in unquoted field" in detail:
            # Only "\n" ends a line here, so a lone "\r" is inside a field.
            detail = (
                "a carriage return (\\r) on its own, outside quotes. Old Mac line ends "
                "are not read: save the file with Windows or Unix line ends, or quote "
                "the field that holds the line break"
            )
        message = f"The CSV cannot be read near line {feed.start}: {detail}."
        raise ParseError(
            message,
            [Problem(f"CSV error: {detail}.", row=error_row, line=feed.start)],
        ) from None
    if header is None:
        raise ParseError("The file is empty: no header and no rows.")


def _unclosed_quote(
    header: list[str] | None, record: list[str], row: int, line: int
) -> Problem:
    """A quoted field never closed: it took the rest of the file, so it is the last."""
    if header is None:
        message = (
            f"The header (from line {line}) opens a quoted field that is never closed, "
            "so the whole file would be read into it. Check the quotes in the header."
        )
        raise ParseError(message, [Problem(message, line=line)])
    column = header[len(record) - 1] if len(record) <= len(header) else None
    return Problem(
        "A quoted field in this row is never closed, so the rest of the file would be "
        "read into it. Check the quotes in this row.",
        row=row,
        column=column,
        line=line,
    )


def _csv_cell_problem(
    header: list[str], record: list[str], limits: Limits
) -> tuple[str, str] | None:
    for name, cell in zip(header, record, strict=True):
        message = _text_problem(cell)
        if message is None and len(cell) > limits.max_cell_chars:
            message = _cell_too_large(len(cell), limits)
        if message is not None:
            return message, name
    return None


def _delimiter_name(delimiter: str) -> str:
    return {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}.get(
        delimiter, repr(delimiter)
    )


def _clean_header(record: list[str], line: int) -> list[str]:
    if len(record) > _MAX_TRACKED_COLUMNS:
        raise ParseError(
            f"The header has {len(record):,} columns; a dataset may have at most "
            f"{_MAX_TRACKED_COLUMNS:,}.",
            [Problem(f"{len(record):,} columns.", line=line)],
        )
    header = []
    problems = []
    seen: set[str] = set()
    for i, raw in enumerate(record):
        name = raw.strip() or f"column_{i + 1}"
        shown = _printable(name)
        message = _text_problem(name)
        if message is not None:
            message = f"The name of column {i + 1} is refused. {message}"
        elif len(name) > MAX_COLUMN_NAME_CHARS:
            shown = shown[:60] + "…"
            message = (
                f"The name of column {i + 1} is {len(name):,} characters long; a name "
                f"may have at most {MAX_COLUMN_NAME_CHARS:,}."
            )
        elif name in seen:
            message = f"Column name {name!r} appears twice in the header."
        if message is not None:
            problems.append(Problem(message, column=shown, line=line))
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
            if len(known) >= _MAX_TRACKED_COLUMNS:
                return
            known.add(key)
            columns.append(key)


def too_many_keys(row: int, keys: int, what: str = "keys") -> str:
    """The message for a row (or an item's metadata) over MAX_COLUMNS keys."""
    return f"Row {row:,} has {keys:,} {what}; at most {MAX_COLUMNS:,}."


# ---------------------------------------------------------------- JSON text

# At a position outside any string: skip text and whole strings, then capture the next
# bracket, comma, or the quote of a string that does not end in the text. Possessive,
# and always used with .match(), so no failed match is ever retried from a later start:
# a long run without structure costs one linear pass.
_JSON_STRUCT = re.compile(
    r'(?:[^"\[\]{},]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([\[\]{},"])', re.S
)
# The rest of a string's body, from inside it: stops at its closing quote, at the end
# of the text, or before a backslash that ends the text (its escape is in the next chunk).
# Like _JSON_SPACE it matches the empty string: .match() never gives None.
_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.S)
# Every token of JSON text, for finding a key in a row already found faulty.
_JSON_TOKEN = re.compile(
    r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{}:,"]|[^"\[\]{}:,]++', re.S
)
_COLON = re.compile(r"[ \t\r\n]*:")
_COLUMN_SEARCH_TOKENS = 200_000
# Whole strings, and everything but brackets: what is left of JSON text is its nesting.
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
# Raw text that may decode to something lib.text refuses: a raw NUL, or a \u escape of
# NUL or of a surrogate (a lone one is refused; a pair is one ordinary character).
_MAYBE_UNSTORABLE = re.compile(r"\x00|\\u(?:0000|[dD][89a-fA-F])")


def _may_be_unstorable(text: str) -> bool:
    # The substring tests run at memchr speed and rule out almost every row.
    return ("\x00" in text or "\\u" in text) and bool(_MAYBE_UNSTORABLE.search(text))


def _undecodable(text: str) -> re.Match[str] | None:
    # ASCII text holds no byte that failed to decode (those became U+DC80..U+DCFF).
    return None if text.isascii() else _UNDECODABLE.search(text)


# How much longer than its raw text a JSON value's compact JSON text can be (a raw
# control character in a string is written back as a six-character escape).
_CELL_GROWTH = 6


def _nesting_overflow(text: str, max_nesting: int) -> int | None:
    """Where JSON `text` first nests deeper than `max_nesting` levels, or None.

    Counted on the text, skipping strings, before anything recurses over it: first on
    its brackets alone (built at C speed), and only for a row found too deep, token by
    token to the place (for the message).
    """
    if text.count("[") + text.count("{") <= max_nesting:
        return None
    skeleton = _STRING.sub("", text)
    quote = skeleton.find('"')  # a string never closed: json.loads names that error
    brackets = _NOT_BRACKET.sub("", skeleton if quote < 0 else skeleton[:quote])
    depth = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > max_nesting:
                break
        else:
            depth -= 1
    else:
        return None
    depth, pos = 0, 0
    while (m := _JSON_STRUCT.match(text, pos)) is not None:
        char = m.group(1)
        if char in "[{":
            depth += 1
            if depth > max_nesting:
                return m.start(1)
        elif char in "]}":
            depth -= 1
        pos = m.end()
    return len(text)  # not reached: the skeleton went over


def _column_at(text: str, pos: int) -> str | None:
    """The top-level key of JSON object text whose value (or name) holds `pos`.

    For a message only: gives up (None) past _COLUMN_SEARCH_TOKENS tokens, so that a
    hostile row costs little more to describe than to refuse.
    """
    depth = 0
    last = key = None
    for count, m in enumerate(_JSON_TOKEN.finditer(text)):
        if m.start() > pos:
            break
        if count == _COLUMN_SEARCH_TOKENS:
            return None
        token = m.group()
        if token == '"':
            break  # a string never closed
        if token[0] == '"':
            if depth == 1:
                last = token
                if m.end() > pos:  # within this string: the key itself, if a name
                    if _COLON.match(text, m.end()):
                        key = token
                    break
        elif token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
        elif depth == 1 and token == ":":
            key = last
        elif depth == 1 and token == ",":
            key = None
    if key is None:
        return None
    try:
        name = json.loads(key, strict=False)
    except ValueError:
        return None
    return _printable(name)[: MAX_COLUMN_NAME_CHARS + 1]


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number, and cannot be stored.")


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"The number {text[:40]} is too large to store.")
    return value


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise ValueError(
            f"A number with {digits:,} digits is too large to store (at most "
            f"{_MAX_INT_DIGITS:,})."
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
                    f"The name {_printable(name)[:60]!r} appears twice in one JSON "
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


def _loads(text: str) -> Any:
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
        column = _printable(key)
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
                return _unstorable(found), column
        if big and (chars := _cell_chars(value)) > limits.max_cell_chars:
            return _cell_too_large(chars, limits), column
    return None


def _json_row(
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

    bad = _undecodable(text)
    if bad:
        return problem(_not_utf8(bad.group()), _column_at(text, bad.start()))
    if not nesting_checked:
        deep = _nesting_overflow(text, limits.max_nesting)
        if deep is not None:
            return problem(_too_deep(limits), _column_at(text, deep))
    try:
        value = _loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        return problem(str(exc))
    if not isinstance(value, dict):
        return problem(f"{label} is a JSON {_json_type(value)}, not an object.")
    if len(value) > MAX_COLUMNS:
        return problem(too_many_keys(row, len(value)))
    found = _json_cell_problem(value, text, limits)
    if found:
        return problem(*found)
    return RawRow(row=row, line=line, values=value, chars=len(text))


def _jsonl_rows(
    texts: Iterator[str], columns: list[str], limits: Limits
) -> Iterator[RawRow | Problem]:
    known: set[str] = set()
    row_number = 0
    for line_number, line in enumerate(_lines(texts, limits.max_row_chars), start=1):
        if isinstance(line, _LongLine):
            row_number += 1
            yield Problem(
                _row_too_large(limits),
                row=row_number,
                column=_column_at(line.head, len(line.head)),
                line=line_number,
            )
            continue
        if not line.strip():
            continue
        row_number += 1
        try:
            out = _json_row(
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


class _ArraySplitter:
    """Cut a streamed top-level JSON array into the text of its elements.

    Only brackets and commas outside strings are looked at, so nesting is counted
    without building anything and at most `max_row_chars` of one element is kept. An
    element past either limit stops the file at that point (ParseError naming its row
    and column): skipping to its end would cost a pass over however much of the file
    it takes, token by token. Each finished element is then checked and decoded alone.
    """

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._buf = ""
        self._pos = 0  # where scanning resumes in _buf
        self._start = 0  # where the current element's text starts in _buf
        self._depth = 0  # 1 between elements (inside the array)
        self._state = (
            "before"  # before the array's "[", "inside" it, or "after" its "]"
        )
        self._in_string = False
        self.elements = 0

    def feed(self, text: str) -> Iterator[tuple[int, str]]:
        """Yield (row, text) for each element this text completes."""
        if self._state == "after":
            self._refuse_trailing(text)
            return
        buf = self._buf + text
        pos = self._pos
        if self._state == "before":
            pos = _JSON_SPACE.match(buf, pos).end()  # type: ignore[union-attr]
            if pos == len(buf):
                self._buf, self._pos = "", 0
                return
            if buf[pos] != "[":
                raise ParseError(
                    "A .json dataset must be one JSON array of objects, like "
                    '[{"input": ..., "output": ...}, ...]. For one object per line, '
                    "use the JSON Lines format (.jsonl)."
                )
            self._state, self._depth = "inside", 1
            pos += 1
            self._start = pos
        yield from self._scan(buf, pos)
        if self._state == "after":
            self._refuse_trailing(buf[self._pos :])
            self._buf, self._pos = "", 0
            return
        if len(buf) - self._start > self._limits.max_row_chars:
            self._refuse(_row_too_large(self._limits), buf[self._start :], None)
        # Keep only the current element's text.
        self._buf = buf[self._start :]
        self._pos -= self._start
        self._start = 0

    def _scan(self, buf: str, pos: int) -> Iterator[tuple[int, str]]:
        limit = self._limits.max_nesting + 1  # the array is the first level
        if self._in_string:
            end = _STRING_REST.match(buf, pos).end()  # type: ignore[union-attr]
            if end == len(buf) or buf[end] != '"':
                self._pos = end  # still inside the string (or before a split escape)
                return
            self._in_string = False
            pos = end + 1
        depth = self._depth
        while (m := _JSON_STRUCT.match(buf, pos)) is not None:
            char, at = m.group(1), m.start(1)
            if char == '"':
                # A string that does not end in this text: skip its body as it streams.
                self._in_string = True
                self._pos = _STRING_REST.match(buf, at + 1).end()  # type: ignore[union-attr]
                self._depth = depth
                return
            pos = m.end()
            if char in "[{":
                depth += 1
                if depth > limit:
                    self._refuse(
                        _too_deep(self._limits),
                        buf[self._start : pos],
                        at - self._start,
                    )
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    if char != "]":
                        raise ParseError(
                            f"The JSON is malformed after element {self.elements} of "
                            'the array: the array is closed with "}".',
                            [Problem("Malformed JSON.", row=self.elements + 1)],
                        )
                    text = buf[self._start : at]
                    if self.elements or text.strip(" \t\r\n"):  # else "[]"
                        yield self._finish(text)
                    self._state, self._depth, self._pos = "after", 0, pos
                    return
            elif depth == 1:  # the comma after an element
                yield self._finish(buf[self._start : at])
                self._start = pos
        # What is left has no bracket, comma or open string: nothing to scan again.
        self._pos = len(buf)
        self._depth = depth

    def _finish(self, text: str) -> tuple[int, str]:
        if len(text) > self._limits.max_row_chars:
            self._refuse(_row_too_large(self._limits), text, None)
        self.elements += 1
        return self.elements, text

    def _refuse(self, message: str, text: str, at: int | None) -> NoReturn:
        row = self.elements + 1
        column = _column_at(text, len(text) if at is None else at)
        problem = Problem(message, row=row, column=column)
        raise ParseError(f"Nothing was imported. {problem.field}: {message}", [problem])

    def _refuse_trailing(self, text: str) -> None:
        if text.strip(" \t\r\n"):
            raise ParseError(
                f"The JSON array ends after element {self.elements}, but the file goes "
                "on. A .json dataset must be one JSON array.",
                [Problem("Text after the end of the JSON array.")],
            )

    def close(self) -> None:
        if self._state == "before":
            raise ParseError("The file is empty: no JSON array found.")
        if self._state == "inside":
            raise ParseError(
                f"The JSON is malformed after element {self.elements} of the array: "
                "the file ends before the array is closed.",
                [
                    Problem(
                        "Malformed JSON: the array is not closed.",
                        row=self.elements + 1,
                    )
                ],
            )


def _json_array_rows(
    texts: Iterator[str], columns: list[str], limits: Limits
) -> Iterator[RawRow | Problem]:
    """The elements of a top-level JSON array, one at a time, from streamed text."""
    known: set[str] = set()
    splitter = _ArraySplitter(limits)
    for text in texts:
        for row, element in splitter.feed(text):
            try:
                out = _json_row(
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
    splitter.close()
    if splitter.elements == 0:
        raise ParseError("The file is empty: the JSON array has no rows.")


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
        present = [r.get(context) for r in rows if r.get(context) not in (None, "")]
        sample = [v for v in present if isinstance(v, str)]
        if (
            sample
            and len(sample) == len(present)
            and not any(v.lstrip().startswith("[") for v in sample)
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
    value: Any, mapping: Mapping, row: RawRow, limits: Limits
) -> tuple[list[str] | None, Problem | None]:
    column = mapping.context

    def problem(message: str) -> tuple[None, Problem]:
        return None, Problem(message, row=row.row, column=column, line=row.line)

    if value is None or value == "":
        return [], None
    if mapping.context_format == "delimited" and isinstance(value, str):
        chunks = [c.strip() for c in value.split(mapping.context_delimiter)]
        return [c for c in chunks if c], None
    if isinstance(value, str):
        # The cell is one level inside its row, as a JSON row's list would be.
        if _nesting_overflow(value, limits.max_nesting - 1) is not None:
            return problem(_too_deep(limits))
        try:
            value = _loads(value)
        except json.JSONDecodeError as exc:
            return problem(
                f"Context is not valid JSON ({exc.msg}); expected a JSON list of strings "
                'like ["chunk one", "chunk two"], or choose the "delimited" context format.'
            )
        except ValueError as exc:
            return problem(f"Context is not valid JSON: {exc}")
        # Escapes in the text decode to new characters: the rule applies to them too.
        found = unstorable_in(value, max_depth=limits.max_nesting + 1)
        if found:
            return problem(_unstorable(found))
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


def _agent_field(
    target: str, value: Any, column: str, row: RawRow, limits: Limits
) -> tuple[Any, Problem | None]:
    """One agent column of a row: text, or JSON (a cell's text is decoded first, as
    context is) checked for its shape by agentdata. Empty: "" or None."""

    def problem(message: str) -> tuple[None, Problem]:
        return None, Problem(message, row=row.row, column=column, line=row.line)

    try:
        if target not in JSON_FIELDS:
            return agent_text(target, value), None
        if value is None or value == "":
            return None, None
        if isinstance(value, str):
            if _nesting_overflow(value, limits.max_nesting - 1) is not None:
                return problem(_too_deep(limits))
            try:
                value = _loads(value)
            except json.JSONDecodeError as exc:
                return problem(
                    f"{LABELS[target]} is not valid JSON ({exc.msg}, at character "
                    f"{exc.pos + 1}); expected {shape_of(target)}."
                )
            except ValueError as exc:
                return problem(f"{LABELS[target]} is not valid JSON: {exc}")
            found = unstorable_in(value, max_depth=limits.max_nesting + 1)
            if found:
                return problem(_unstorable(found))
        return agent_value(target, value), None
    except AgentDataError as exc:
        return problem(str(exc))


def map_row(
    raw: RawRow, mapping: Mapping, index: int, limits: Limits | None = None
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
        context, problem = _context_list(
            values.get(mapping.context), mapping, raw, limits or Limits()
        )
        if problem:
            problems.append(problem)
    agent: dict[str, Any] = {}
    for target in AGENT_FIELDS:
        column = getattr(mapping, target)
        if column:
            agent[target], problem = _agent_field(
                target, values.get(column), column, raw, limits or Limits()
            )
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
    if len(metadata) > MAX_COLUMNS:
        message = too_many_keys(raw.row, len(metadata), "metadata keys")
        return None, [Problem(message, row=raw.row, column="metadata", line=raw.line)]
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
            chars=raw.chars,
            **{k: v for k, v in agent.items() if v is not None},
        ),
        [],
    )


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
            _check_columns_exist(mapping, columns, header=True)
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
    for target in TARGETS:
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
    for target in TARGETS:
        if getattr(mapping, target) == column:
            return target
    return "?"


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
