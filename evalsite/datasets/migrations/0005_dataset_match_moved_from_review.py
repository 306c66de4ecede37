"""DatasetMatch and DatasetMatchPair move from review to datasets (state only: they
keep their tables, review_datasetmatch and review_datasetmatchpair)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0013_dataset_match"),
        ("datasets", "0004_item_agent_data"),
    ]

    operations = [
        # State only: the tables stay where they are (Meta.db_table), no row moves.
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="DatasetMatch",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "rule",
                            models.CharField(
                                help_text="MatchSpec.cache_token()", max_length=120
                            ),
                        ),
                        ("items_a", models.PositiveIntegerField()),
                        ("items_b", models.PositiveIntegerField()),
                        ("matched", models.PositiveIntegerField()),
                        ("only_in_a", models.PositiveIntegerField()),
                        ("only_in_b", models.PositiveIntegerField()),
                        ("no_key_a", models.PositiveIntegerField()),
                        ("no_key_b", models.PositiveIntegerField()),
                        ("duplicates", models.JSONField(blank=True, default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "dataset_a",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="datasets.dataset",
                            ),
                        ),
                        (
                            "dataset_b",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="datasets.dataset",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "review_datasetmatch",
                    },
                ),
                migrations.CreateModel(
                    name="DatasetMatchPair",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "match",
                                "item_a",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("item_a", models.BigIntegerField()),
                        ("item_b", models.BigIntegerField()),
                        (
                            "match",
                            models.ForeignKey(
                                db_constraint=False,
                                db_index=False,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pairs",
                                to="datasets.datasetmatch",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "review_datasetmatchpair",
                    },
                ),
                migrations.AddConstraint(
                    model_name="datasetmatch",
                    constraint=models.UniqueConstraint(
                        fields=("dataset_a", "dataset_b", "rule"),
                        name="unique_dataset_match_per_rule",
                    ),
                ),
            ],
        ),
    ]
