"""What one row of an uploaded or imported file may cost, and how a refusal is told.

`Limits` bound a row (nesting, cell and row size); `Problem` is one thing wrong with
one row, `ParseError` a file that cannot be read at all. The messages every reader
gives for the limits are here, so a CSV, a JSON Lines file, a JSON array and another
tool's export word the same refusal the same way. No Django in here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A JSON dataset whose rows all have different keys must not grow `columns` forever,
# and a CSV header may have no more (the mapping page lists every column). A row (its
# keys, JSON) and an item's metadata (the unmapped columns and a row's own "metadata"
# object, uploads and imports alike) may have no more either: one JSON row of 200,000
# keys took the mapping page 4 minutes and 1 GB, and its dataset page 10 MB of HTML.
MAX_COLUMNS = 500
# Column names are shown in table headers and kept in Dataset.columns.
MAX_COLUMN_NAME_CHARS = 1000
# A row may hold this many full-size cells, plus room for its keys and punctuation.
ROW_CELLS = 4
ROW_SLACK_CHARS = 64 * 1024
# Longer integers are refused: far beyond any real value, and Python will not convert
# an integer of more than 4,300 digits to text.
MAX_INT_DIGITS = 1000


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
        return ROW_CELLS * self.max_cell_chars + ROW_SLACK_CHARS


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


@dataclass
class RawRow:
    """One row of a file as read, before it is mapped to an item's fields."""

    row: int
    line: int | None
    values: dict[str, Any]
    chars: int = 0


# ---------------------------------------------------------------- messages


def not_utf8(char: str) -> str:
    """For a byte that did not decode (a lone surrogate, see text.text_chunks)."""
    return (
        f"Byte 0x{ord(char) - 0xDC00:02X} is not UTF-8: the file is probably in another "
        "encoding (such as Windows-1252). Save it as UTF-8 and upload it again."
    )


def unstorable(found: str) -> str:
    return f"Contains {found}, which cannot be stored; remove it and upload the file again."


def too_deep(limits: Limits) -> str:
    return (
        f"This value is nested more than {limits.max_nesting} levels deep (counting the "
        "row itself); flatten it, or store it as a JSON string."
    )


def cell_too_large(chars: int, limits: Limits) -> str:
    return (
        f"This cell is {chars:,} characters long; a cell may hold at most "
        f"{limits.max_cell_chars:,}."
    )


def row_too_large(limits: Limits) -> str:
    return (
        f"This row is over {limits.max_row_chars:,} characters long; a cell may hold at "
        f"most {limits.max_cell_chars:,} characters."
    )


def value_too_large(limits: Limits) -> str:
    """For one value of another tool's document (it is not a row of the dataset)."""
    return (
        f"This value is over {limits.max_row_chars:,} characters long; a "
        f"cell may hold at most {limits.max_cell_chars:,}."
    )


def too_many_keys(row: int, keys: int, what: str = "keys") -> str:
    """The message for a row (or an item's metadata) over MAX_COLUMNS keys."""
    return f"Row {row:,} has {keys:,} {what}; at most {MAX_COLUMNS:,}."
