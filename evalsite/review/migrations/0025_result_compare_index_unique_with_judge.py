"""Compare's covering index becomes unique on (run scorer, item) and carries the
judge's verdict.

review_result_compare_idx held (run_scorer_id, item_id, id, status, final_score,
final_passed) as plain key columns. On Postgres it is replaced by a UNIQUE index on
(run_scorer_id, item_id) that INCLUDEs the rest and judge_passed:

- unique on (run scorer, item) (true of the data: a run scorer belongs to one run
  and (run, item, run scorer) is unique), the planner knows each side of compare's
  join has one row per item, and its merge join reads the inner side without a
  Materialize node: 433 ms of a 200k × 200k pair's 504 ms aggregate went to the join
  with one, of which ~200 ms to the Materialize (EXPLAIN ANALYZE, bench_million's 2 ×
  1M results, load 8);
- judge_passed lets compare's aggregate count the judges' verdicts on the matched
  items (the corrected difference's judge figures) in the same index-only pass,
  where they were two queries that loaded 2 × 200k rows into Python (2.5 s of a 3.2
  s cached compare page).

On SQLite (no INCLUDE) the old index stays as it is; the queries are the same.

Built CONCURRENTLY on Postgres (so outside a transaction: atomic = False), as
review_result_compare_idx was: workers keep writing results during a deploy.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

OLD = "review_result_compare_idx"
OLD_COLUMNS = "run_scorer_id, item_id, id, status, final_score, final_passed"
NEW = "review_result_pair_idx"
NEW_COLUMNS = (
    "run_scorer_id, item_id) INCLUDE (id, status, final_score, final_passed, "
    "judge_passed"
)


def _drop_invalid(schema_editor: Any, name: str) -> None:
    """A concurrent build that failed leaves an INVALID index behind, which IF NOT
    EXISTS would keep: drop it so it is built again."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND NOT i.indisvalid",
            [name],
        )
        invalid = cursor.fetchone() is not None
    if invalid:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    _drop_invalid(schema_editor, NEW)
    schema_editor.execute(
        f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {NEW} "
        f"ON evals_result ({NEW_COLUMNS})"
    )
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {OLD}")


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    _drop_invalid(schema_editor, OLD)
    schema_editor.execute(
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {OLD} ON evals_result ({OLD_COLUMNS})"
    )
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NEW}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("review", "0024_queue_entry_shape_index")]

    operations = [migrations.RunPython(forwards, backwards)]
