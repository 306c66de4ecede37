"""Indexes that serve the explorer's score and update-time sorts within a run.

The explorer sorts a run's results by judge score, final score (each ↑ and ↓, empty
scores last) or last update (review.explorer.selectors.SORTS). Without an index in
that order Postgres reads every result of the run and keeps the top 50: on a
1M-result run (bench_million) the page's query took 2.9 s sorted by final score ↓ and
3.1 s by update time ↓ (EXPLAIN ANALYZE, 2 cores under load); with these indexes
0.12 ms each, an index-only walk of the first 50 entries. Each sort needs its own direction because
"empty scores last" holds in both directions, which one index read backwards cannot
give; update time ↓ is "updated ↑" read backwards.

Built CONCURRENTLY on Postgres (so outside a transaction: atomic = False), as
review_result_compare_idx is: workers keep writing results during a deploy.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEXES = {
    "review_result_judge_asc_idx": "run_id, judge_score ASC NULLS LAST, id",
    "review_result_judge_desc_idx": "run_id, judge_score DESC NULLS LAST, id",
    "review_result_final_asc_idx": "run_id, final_score ASC NULLS LAST, id",
    "review_result_final_desc_idx": "run_id, final_score DESC NULLS LAST, id",
    "review_result_updated_idx": "run_id, updated_at, id",
}


def _concurrently(schema_editor: Any) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


def create_indexes(apps: Any, schema_editor: Any) -> None:
    for name, columns in INDEXES.items():
        if schema_editor.connection.vendor == "postgresql":
            # A concurrent build that failed leaves an INVALID index behind, which
            # IF NOT EXISTS would keep: drop it and build again.
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = %s AND NOT i.indisvalid",
                    [name],
                )
                invalid = cursor.fetchone() is not None
            if invalid:
                schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        else:
            # SQLite's index columns take no NULLS clause (NULL sorts first there).
            columns = columns.replace(" NULLS LAST", "")
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
        ("review", "0017_calibration_sample"),
    ]

    operations = [migrations.RunPython(create_indexes, drop_indexes)]
