"""Text the database can store: one rule for every field a user types or uploads.

PostgreSQL refuses NUL (U+0000) in text and jsonb, and UTF-8 cannot encode a lone
surrogate (U+D800..U+DFFF, which a JSON ``\\ud800`` escape produces), so either would
reach the database driver and fail there as a server error. We refuse such text with a
message naming the field rather than clean it: silently dropping characters would change
what a user wrote or uploaded without telling them.
"""

from __future__ import annotations

import re
from typing import Any

from evalsite.core.exceptions import ApplicationError

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_char(text: str) -> str | None:
    """A description of the first character the database cannot store, or None."""
    match = _UNSTORABLE.search(text)
    if match is None:
        return None
    char = match.group()
    if char == "\x00":
        return "a NUL character (U+0000)"
    return f"an unpaired surrogate (U+{ord(char):04X})"


def unstorable_in(value: Any, *, max_depth: int = 64) -> str | None:
    """Like ``unstorable_char`` for a JSON-like value (strings, keys, lists, dicts)."""
    if isinstance(value, str):
        return unstorable_char(value)
    if max_depth <= 0:
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = unstorable_in(key, max_depth=max_depth - 1) or unstorable_in(
                item, max_depth=max_depth - 1
            )
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for item in value:
            found = unstorable_in(item, max_depth=max_depth - 1)
            if found:
                return found
    return None


def text_check_storable(text: str, *, field: str) -> None:
    """Raise ApplicationError (with a field error) when ``text`` cannot be stored."""
    found = unstorable_char(text)
    if found:
        message = f"Contains {found}, which cannot be stored; remove it and try again."
        raise ApplicationError(f"{field}: {message}", field_errors={field: message})
