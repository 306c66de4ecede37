"""The project audit log as CSV: the filtered log, one row per event, every text cell
spreadsheet-safe (lib.csvsafe), streamed a chunk of events at a time."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from evalsite.accounts.models import AuditEvent
from evalsite.accounts.selectors import AuditEventsReadable
from evalsite.lib.csvsafe import safe_cell

AUDIT_COLUMNS = (
    "id",
    "created_at",
    "actor",
    "action",
    "object_type",
    "object_id",
    "object_label",
    "run_id",
    "result_id",
    "subject",
    "summary",
    "before",
    "after",
)
_CHUNK = 500


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def audit_row(event: AuditEvent) -> list[str]:
    """An event's CSV cells, in AUDIT_COLUMNS order."""
    values = (
        event.pk,
        event.created_at.isoformat(),
        event.actor.get_username() if event.actor else None,
        event.action,
        event.object_type,
        event.object_id,
        event.object_label,
        event.run_id,
        event.result_id,
        event.subject.get_username() if event.subject else None,
        event.summary,
        _json(event.before),
        _json(event.after),
    )
    return [safe_cell(value) for value in values]


def audit_csv_stream(events: AuditEventsReadable) -> Iterator[bytes]:
    """The events (already filtered, read as their reader may) as CSV bytes."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> bytes:
        data = buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()
        return data

    writer.writerow(AUDIT_COLUMNS)
    yield flush()
    total = len(events)
    for start in range(0, total, _CHUNK):
        for event in events[start : start + _CHUNK]:
            writer.writerow(audit_row(event))
        yield flush()
