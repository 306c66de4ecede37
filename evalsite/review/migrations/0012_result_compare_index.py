"""A covering index on evals_result for compare's joins.

Compare reads, per run scorer, every result's id, item, status, final score and
verdict, and joins two run scorers on their items (review.selectors.compare). With
these columns in one index Postgres answers each side with an index-only scan
instead of visiting every wide, JSON-carrying result row: the four scorers'
aggregate of two 100k-result runs took 198 ms reading the rows, 121 ms from this
index (bench_compare's data, Postgres 15). Plain key columns, not INCLUDE, so the
same statement builds it on SQLite. It lives here, like review_result_agg_idx,
because the review app is the one that reads results this way.
"""

from __future__ import annotations

from django.db import migrations

INDEX = "review_result_compare_idx"
COLUMNS = "run_scorer_id, item_id, id, status, final_score, final_passed"


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0004_judge_key_url"),
        ("review", "0011_pairwise_review"),
    ]

    operations = [
        migrations.RunSQL(
            sql=f"CREATE INDEX IF NOT EXISTS {INDEX} ON evals_result ({COLUMNS})",
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        )
    ]
