"""Values the run export hands to its writers (kept apart from parquet.py, which
imports pyarrow, so the CSV and JSONL exports never load it), and the Parquet
export's text of the values Arrow does not take as they are."""

from __future__ import annotations

import json
from typing import Any


class JsonText(str):
    """Text that is a value's JSON already: written as it is, never encoded again."""

    __slots__ = ()


def json_text(value: Any) -> str | None:
    """A nested value (kind "json") as JSON text; None stays None."""
    if value is None:
        return None
    if value.__class__ is JsonText:
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def list_text(value: Any) -> str:
    """A list (kind "list") as JSON text; anything else is []."""
    return json.dumps(value if isinstance(value, list) else [], ensure_ascii=False)


def meta_text(value: Any) -> str | None:
    """A metadata value (kind "meta"): text as it is, anything else JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
