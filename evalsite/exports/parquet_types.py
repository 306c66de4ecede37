"""Values the run export hands to its writers (kept apart from parquet.py, which
imports pyarrow, so the CSV and JSONL exports never load it)."""

from __future__ import annotations


class JsonText(str):
    """Text that is a value's JSON already: written as it is, never encoded again."""

    __slots__ = ()
