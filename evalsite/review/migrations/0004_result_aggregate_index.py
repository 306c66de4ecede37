"""A covering index on evals_result for the review aggregates.

run_aggregates reads only these columns for one run scorer, so Postgres answers the
per-scorer counts, means and histogram with an index-only scan instead of visiting
every (wide, JSON-carrying) result row: the override request's recomputed aggregates
stay within budget on a 100k-result run. It lives here because the review app is
the one that reads it this way; if the evals app adopts it in Result.Meta.indexes,
replace this migration with a no-op.
"""

from __future__ import annotations

from django.db import migrations

INDEX = "review_result_agg_idx"
COLUMNS = (
    "run_scorer_id, status, reviewed, overridden, judge_passed, final_passed, "
    "judge_score, final_score"
)


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0002_result_claim"),
        ("review", "0003_override_flip_prior_review"),
    ]

    operations = [
        migrations.RunSQL(
            sql=f"CREATE INDEX IF NOT EXISTS {INDEX} ON evals_result ({COLUMNS})",
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        )
    ]
