"""Calibration samples: a queue source whose entries record the chance each result had
of being drawn, so the estimates can weight its labels (inverse probability)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("review", "0016_models_moved_to_evals_and_datasets")]

    operations = [
        migrations.AddField(
            model_name="reviewqueue",
            name="design",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="reviewqueue",
            name="source",
            field=models.CharField(
                choices=[
                    ("filters", "From filters"),
                    ("disagreement", "Disagreement"),
                    ("stratified", "Stratified sample"),
                    ("assigned", "Assigned to me"),
                    ("calibration", "Calibration sample"),
                ],
                default="filters",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="queueentry",
            name="inclusion_probability",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
