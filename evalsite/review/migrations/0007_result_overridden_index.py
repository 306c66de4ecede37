"""A partial index on the overridden results, for the explorer's disagreement filter
and the disagreement queue: a handful of rows per run, found without a scan."""

from __future__ import annotations

from django.db import migrations

INDEX = "review_result_overridden_idx"


class Migration(migrations.Migration):
    dependencies = [("review", "0006_review_version")]

    operations = [
        migrations.RunSQL(
            sql=(
                f"CREATE INDEX IF NOT EXISTS {INDEX} ON evals_result (run_id, id) "
                "WHERE overridden"
            ),
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        )
    ]
