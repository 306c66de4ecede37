"""A covering partial index on evals_result for the "waiting for you" badge.

The badge (review.queues.waiting.waiting_assigned) counts a reviewer's assigned,
judged, not yet reviewed results that sit in no queue, on every project page. It read
each such result row (wide, JSON-carrying) to check its status and review: 89k
assigned results of bench_million's reviewer took 550 ms of heap reads (load 7-11).
This index holds only those rows (assigned, ok, not reviewed) with the columns the
count reads, in id order, so the count is an index-only scan merged against the queue
entries' result index: 22 ms for the scan, 85 ms for the whole count under the same
load. It stays small: reviewing a result takes it out. Plain key columns, not INCLUDE,
so the same statement builds it on SQLite.

Built CONCURRENTLY on Postgres (so outside a transaction: atomic = False): a plain
CREATE INDEX blocks every write to the results table while it builds.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEX = "review_result_assigned_waiting_idx"
COLUMNS = "assignee_id, id, run_id"
CONDITION = "status = 'ok' AND NOT reviewed AND assignee_id IS NOT NULL"


def _concurrently(schema_editor: Any) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


def create_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        # A concurrent build that failed (or was interrupted) leaves an INVALID
        # index behind, which IF NOT EXISTS would keep: drop it and build again.
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = %s AND NOT i.indisvalid",
                [INDEX],
            )
            invalid = cursor.fetchone() is not None
        if invalid:
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
    schema_editor.execute(
        f"CREATE INDEX {_concurrently(schema_editor)}IF NOT EXISTS {INDEX} "
        f"ON evals_result ({COLUMNS}) WHERE {CONDITION}"
    )


def drop_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(f"DROP INDEX {_concurrently(schema_editor)}IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("evals", "0011_judgeconnection_archived_run_archived"),
        ("review", "0022_result_filter_count_indexes"),
    ]

    operations = [migrations.RunPython(create_index, drop_index)]
