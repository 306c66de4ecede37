"""Spreadsheet-safe CSV cells, shared by the dataset and run exports.

Spreadsheet apps execute a cell that starts with = + - @ as a formula (and tab or carriage
return can smuggle one past naive checks), so such text cells get a leading single quote,
which the apps show as plain text (OWASP "CSV injection").
"""

from __future__ import annotations

import json
from typing import Any

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> str:
    """The value as CSV cell text, neutralised if a spreadsheet could run it.

    None is an empty cell; lists and dicts are JSON. Real numbers are left alone: "-0.5"
    written from a float is a number, not a formula, and quoting it would break sums.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value)
    if text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text
