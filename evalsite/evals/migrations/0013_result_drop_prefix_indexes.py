"""Drop evals_result's own indexes on run_id, run_scorer_id and assignee_id: each is
the first column of another index (unique_result_per_item_scorer,
review_result_agg_idx, (assignee_id, run_id)), so no read needs them, and every write
of a result maintained them (each write moves updated_at, which other indexes hold).

Only the indexes go: Django's AlterField would also drop and re-add each foreign key,
and re-adding one checks every row of a table of millions under a lock."""

from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

INDEXES = {
    "evals_result_assignee_id_30a0bf7d": "assignee_id",
    "evals_result_run_id_cd1a0180": "run_id",
    "evals_result_run_scorer_id_0a3cf58c": "run_scorer_id",
}


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0012_run_deleting"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql=f"DROP INDEX IF EXISTS {name}",
                    reverse_sql=(
                        f"CREATE INDEX IF NOT EXISTS {name} ON evals_result ({column})"
                    ),
                )
                for name, column in INDEXES.items()
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="result",
                    name="assignee",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="result",
                    name="run",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="results",
                        to="evals.run",
                    ),
                ),
                migrations.AlterField(
                    model_name="result",
                    name="run_scorer",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="results",
                        to="evals.runscorer",
                    ),
                ),
            ],
        )
    ]
