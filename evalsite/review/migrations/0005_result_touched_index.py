"""A partial covering index on the reviewed or overridden results.

run_aggregates counts the review side of a run scorer (reviewed or overridden results)
separately from the judge side, so an override recounts only the touched rows; this
index holds exactly those rows, so that count stays small however large the run is.
"""

from __future__ import annotations

from django.db import migrations

INDEX = "review_result_touched_idx"
COLUMNS = (
    "run_scorer_id, status, reviewed, overridden, judge_passed, final_passed, "
    "judge_score, final_score"
)


class Migration(migrations.Migration):
    dependencies = [("review", "0004_result_aggregate_index")]

    operations = [
        migrations.RunSQL(
            sql=(
                f"CREATE INDEX IF NOT EXISTS {INDEX} ON evals_result ({COLUMNS}) "
                "WHERE reviewed OR overridden"
            ),
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        )
    ]
