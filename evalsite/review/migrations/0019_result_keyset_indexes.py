"""Indexes that serve the explorer's and the matrix's sorts by score and update time,
for keyset paging: (run scorer | run, sort column, id).

Every sort ends in the id, so one index range scan (backwards for the descending
sorts) gives a page wherever its cursor points. Without them Postgres read and
top-N-sorted a scorer's 100k results for each page of the matrix sorted by judge
score: 324 ms for the first page and 340 ms for a deep one before, 5 ms and 12 ms
with them (one backward index scan), on bench_results_matrix's 100k items × 5 scorers. The item sort needs none: the unique (run, item,
run_scorer) index serves it.

Built CONCURRENTLY on Postgres (so outside a transaction: atomic = False), as
review_result_compare_idx is: workers keep writing results during a deploy.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEXES = {
    "review_result_rs_judge_idx": "run_scorer_id, judge_score, id",
    "review_result_rs_final_idx": "run_scorer_id, final_score, id",
    "review_result_rs_updated_idx": "run_scorer_id, updated_at, id",
    "review_result_run_judge_idx": "run_id, judge_score, id",
    "review_result_run_final_idx": "run_id, final_score, id",
    "review_result_run_updated_idx": "run_id, updated_at, id",
}


def _concurrently(schema_editor: Any) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


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


def create_indexes(apps: Any, schema_editor: Any) -> None:
    for name, columns in INDEXES.items():
        if schema_editor.connection.vendor == "postgresql":
            _drop_invalid(schema_editor, name)
        schema_editor.execute(
            f"CREATE INDEX {_concurrently(schema_editor)}IF NOT EXISTS {name} "
            f"ON evals_result ({columns})"
        )


def drop_indexes(apps: Any, schema_editor: Any) -> None:
    for name in INDEXES:
        schema_editor.execute(
            f"DROP INDEX {_concurrently(schema_editor)}IF EXISTS {name}"
        )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("evals", "0008_verdict_models_moved_from_review"),
        ("review", "0018_judge_lab"),
    ]

    operations = [migrations.RunPython(create_indexes, drop_indexes)]
