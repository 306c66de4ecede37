"""A covering index of results by id with their scorer and verdicts, for the reads
that look results up by the ids of their answers.

The agreement figures and the alternative-annotator test read the run scorer, the
status and the judge's and final verdicts of every answered result (`pk IN (answered)`).
By primary key that fetched each result's heap row, wide with its analyses: 49k
lookups read 52k pages, 1.4 s of a 1.9 s query on bench_million's 50k-result
overlap-3 queue (EXPLAIN ANALYZE, load 5-6). From this index, an index-only scan,
they read 5k pages: 0.32 s, the query 0.65 s.

On SQLite (no INCLUDE) nothing is built; the queries are the same. Built
CONCURRENTLY on Postgres (so outside a transaction: atomic = False), as 0025's:
workers keep writing results during a deploy.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

NAME = "review_result_id_verdicts_idx"
COLUMNS = "id) INCLUDE (run_scorer_id, status, judge_passed, final_passed"


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        # A failed concurrent build leaves an INVALID index that IF NOT EXISTS keeps.
        cursor.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND NOT i.indisvalid",
            [NAME],
        )
        if cursor.fetchone() is not None:
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")
    schema_editor.execute(
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {NAME} ON evals_result ({COLUMNS})"
    )


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("review", "0025_result_compare_index_unique_with_judge")]

    operations = [migrations.RunPython(forwards, backwards)]
