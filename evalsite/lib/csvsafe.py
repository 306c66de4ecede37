"""Spreadsheet-safe CSV cells: the one rule for the run and dataset exports.

Spreadsheet apps run a cell whose text starts with = + - @ as a formula (OWASP "CSV
injection"), and they find that character past what a naive first-character check
sees: leading spaces or line feeds (" =1+1", "\\n=cmd"), and the full-width or small
forms that spreadsheet input converts to ASCII ("＝HYPERLINK(…)", "﹢1"). Such text
cells get a leading single quote, which the apps show as plain text; a cell starting
with a tab or carriage return is quoted too. The text itself is never altered.

Real numbers are not text: an int or float is written as a number, so -0.5 stays a
number a spreadsheet can sum.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

# Characters that start a formula, once compatibility forms are folded to ASCII
# (NFKC: "＝" U+FF1D and "﹦" U+FE66 become "=", "－" U+FF0D becomes "-", …).
_FORMULA = frozenset("=+-@")
# Leading characters after which the text cannot be a formula: printable ASCII other
# than the formula characters and space. Every other first character (whitespace,
# control characters, anything non-ASCII) takes the slower, complete check.
_PLAIN_FIRST = frozenset(chr(c) for c in range(0x21, 0x7F)) - _FORMULA


def safe_cell(value: Any) -> str:
    """The value as CSV cell text, neutralised if a spreadsheet could run it.

    None is an empty cell; booleans are true/false; ints and floats are numbers (never
    quoted); lists and dicts are JSON. The export calls this for every cell (millions
    per export), so plain text is decided on its first character alone.
    """
    cls = value.__class__
    if cls is str:
        text: str = value
        if not text or text[0] in _PLAIN_FIRST:
            return text
        return _neutralised(text)
    if value is None:
        return ""
    if cls is int:
        return str(value)
    if cls is float:
        return repr(value)
    if cls is bool:
        return "true" if value else "false"
    return _other(value)


def _other(value: Any) -> str:
    """Subclasses and everything else: numbers stay numbers, the rest is text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value)
    if not text or text[0] in _PLAIN_FIRST:
        return text
    return _neutralised(text)


def is_formula_like(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula (see the module docstring)."""
    if not text:
        return False
    if text[0] in "\t\r":
        return True
    stripped = text.lstrip()
    if not stripped:
        return False
    first = stripped[0]
    if first in _FORMULA:
        return True
    return first >= "\x80" and unicodedata.normalize("NFKC", first) in _FORMULA


def _neutralised(text: str) -> str:
    return "'" + text if is_formula_like(text) else text
