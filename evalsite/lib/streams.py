"""Streamed CSV and JSON Lines bodies: the run and dataset exports and the pairwise
answers download write their files through these, a chunk of about FLUSH_BYTES at a
time, so no export holds more than one chunk of text in memory."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from evalsite.lib.csvsafe import safe_cell

FLUSH_BYTES = 64 * 1024
UTF8_BOM = "\ufeff"


def csv_stream(
    header: Iterable[str], rows: Iterable[list[str]], *, excel: bool
) -> Iterator[bytes]:
    """UTF-8 CSV of `header` then `rows` (cells already text, made safe by the
    caller); `excel` starts it with the byte-order mark Excel needs to read UTF-8."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if excel:
        # Excel only reads a CSV as UTF-8 when it starts with a byte-order mark.
        buffer.write(UTF8_BOM)
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow(row)
        if buffer.tell() >= FLUSH_BYTES:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def jsonl_stream(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """One JSON object per line (times as ISO 8601, anything else JSON lacks as text)."""
    parts: list[str] = []
    size = 0
    for record in records:
        line = json.dumps(record, ensure_ascii=False, default=_json_default) + "\n"
        parts.append(line)
        size += len(line)
        if size >= FLUSH_BYTES:
            yield "".join(parts).encode("utf-8")
            parts, size = [], 0
    yield "".join(parts).encode("utf-8")
