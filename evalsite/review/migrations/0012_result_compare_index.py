"""A covering index on evals_result for compare's joins.

Compare reads, per run scorer, every result's id, item, status, final score and
verdict, and joins two run scorers on their items (review.selectors.compare). With
these columns in one index Postgres answers each side with an index-only scan
instead of visiting every wide, JSON-carrying result row: the four scorers'
aggregate of two 100k-result runs took 198 ms reading the rows, 121 ms from this
index (bench_compare's data, Postgres 15). Plain key columns, not INCLUDE, so the
same statement builds it on SQLite. It lives here, like review_result_agg_idx,
because the review app is the one that reads results this way.

Built CONCURRENTLY on Postgres (so outside a transaction: atomic = False): a plain
CREATE INDEX blocks every write to the results table while it builds, and workers
keep writing results during a deploy.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INDEX = "review_result_compare_idx"
COLUMNS = "run_scorer_id, item_id, id, status, final_score, final_passed"


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
        f"ON evals_result ({COLUMNS})"
    )


def drop_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(f"DROP INDEX {_concurrently(schema_editor)}IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("evals", "0004_judge_key_url"),
        ("review", "0011_pairwise_review"),
    ]

    operations = [migrations.RunPython(create_index, drop_index)]
