"""Counts on the result rows that the review aggregates read instead of joining or
parsing: overridable values of the judge analysis, active overrides and flips. The
review app's 0005 fills the override counts; overridable_count is filled here."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from scoring import overridable_count


def backfill_overridable_count(apps: Any, schema_editor: Any) -> None:
    Result = apps.get_model("evals", "Result")
    rows = (
        Result.objects.filter(analysis__isnull=False)
        .select_related("run_scorer")
        .only("id", "analysis", "run_scorer__kind")
        .order_by("id")
    )
    batch = []
    for result in rows.iterator(chunk_size=2000):
        try:
            result.overridable_count = overridable_count(
                result.run_scorer.kind, result.analysis
            )
        except Exception:  # an unknown kind from an old build counts 0
            continue
        batch.append(result)
        if len(batch) >= 2000:
            Result.objects.bulk_update(batch, ["overridable_count"])
            batch = []
    Result.objects.bulk_update(batch, ["overridable_count"])


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0002_result_claim"),
    ]

    operations = [
        migrations.AddField(
            model_name="result",
            name="overridable_count",
            field=models.PositiveIntegerField(
                db_default=0,
                default=0,
                help_text=(
                    "Values of the analysis a reviewer can flip "
                    "(scoring.overridable_count)."
                ),
            ),
        ),
        migrations.AddField(
            model_name="result",
            name="active_override_count",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="result",
            name="verdict_flip_count",
            field=models.PositiveIntegerField(
                db_default=0,
                default=0,
                help_text="Active verdict overrides that differ from the judge.",
            ),
        ),
        migrations.RunPython(backfill_overridable_count, migrations.RunPython.noop),
    ]
