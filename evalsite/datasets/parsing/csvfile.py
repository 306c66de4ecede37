"""Rows of a CSV file (or TSV, or any of CSV_DELIMITERS), streamed.

A record is counted line by line as the csv module reads it, so a quote never closed
(which would swallow the rest of the file) stops the file at the row limit instead of
being held whole. No Django in here.
"""

from __future__ import annotations

import csv
import itertools
import sys
from collections.abc import Iterable, Iterator
from typing import NoReturn

from evalsite.datasets.parsing.limits import (
    MAX_COLUMN_NAME_CHARS,
    MAX_COLUMNS,
    Limits,
    ParseError,
    Problem,
    RawRow,
    cell_too_large,
)
from evalsite.datasets.parsing.text import LongLine, lines, printable, text_problem
from evalsite.lib.text import unstorable_char

# Delimiters the CSV sniffer may choose from; anything else is almost always a mis-guess.
CSV_DELIMITERS = ",;\t|"
# Enough lines for csv.Sniffer to see a pattern without reading a huge file.
_SNIFF_MAX_CHARS = 64 * 1024
_SNIFF_MAX_LINES = 50

# Allow fields of any size (long retrieved contexts); the upload size limit bounds them.
try:
    csv.field_size_limit(sys.maxsize)
except OverflowError:  # pragma: no cover - 32-bit C long
    csv.field_size_limit(2**31 - 1)


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

    def __init__(self, lines: Iterable[str | LongLine], limits: Limits) -> None:
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
            if isinstance(text, LongLine):
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


def csv_rows(
    texts: Iterator[str], columns: list[str], limits: Limits
) -> Iterator[RawRow | Problem]:
    """The header (into `columns`), then one RawRow or Problem per record; the
    delimiter is sniffed from the first lines."""
    rest = lines(texts, limits.max_row_chars)
    sample_lines: list[str | LongLine] = []
    size = 0
    for line in rest:
        sample_lines.append(line)
        if isinstance(line, LongLine):
            break  # the feed refuses it in order
        size += len(line)
        if size >= _SNIFF_MAX_CHARS or len(sample_lines) >= _SNIFF_MAX_LINES:
            break
    sample = [line for line in sample_lines if isinstance(line, str)]
    if len(sample) == len(sample_lines) and not any(line.strip() for line in sample):
        raise ParseError("The file is empty: no header and no rows.")
    header_line = next((line for line in sample if line.strip()), "")
    delimiter = _sniff_delimiter("".join(sample)[:_SNIFF_MAX_CHARS], header_line)

    feed = _CsvFeed(itertools.chain(sample_lines, rest), limits)
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
        message = text_problem(cell)
        if message is None and len(cell) > limits.max_cell_chars:
            message = cell_too_large(len(cell), limits)
        if message is not None:
            return message, name
    return None


def _delimiter_name(delimiter: str) -> str:
    return {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}.get(
        delimiter, repr(delimiter)
    )


def _clean_header(record: list[str], line: int) -> list[str]:
    if len(record) > MAX_COLUMNS:
        raise ParseError(
            f"The header has {len(record):,} columns; a dataset may have at most "
            f"{MAX_COLUMNS:,}.",
            [Problem(f"{len(record):,} columns.", line=line)],
        )
    header = []
    problems = []
    seen: set[str] = set()
    for i, raw in enumerate(record):
        name = raw.strip() or f"column_{i + 1}"
        shown = printable(name)
        message = text_problem(name)
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
