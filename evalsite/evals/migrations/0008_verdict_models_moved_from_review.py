"""Override, Comment and ReviewVersion move from review to evals, which holds the
verdict (state only: they keep their tables, review_override, review_comment and
review_reviewversion)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0014_queue_filters_run_scorer"),
        ("evals", "0007_judgecall_error_body"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # State only: the tables stay where they are (Meta.db_table), no row moves.
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ReviewVersion",
                    fields=[
                        (
                            "run_scorer",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="review_version",
                                serialize=False,
                                to="evals.runscorer",
                            ),
                        ),
                        ("version", models.PositiveBigIntegerField(default=0)),
                    ],
                    options={
                        "db_table": "review_reviewversion",
                    },
                ),
                migrations.CreateModel(
                    name="Comment",
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
                        ("body", models.TextField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "result",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="comments",
                                to="evals.result",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "review_comment",
                        "ordering": ["created_at", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="Override",
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
                            "kind",
                            models.CharField(
                                choices=[
                                    ("verdict", "Verdict"),
                                    ("score", "Score"),
                                    ("pass", "Pass/fail"),
                                ],
                                max_length=8,
                            ),
                        ),
                        (
                            "path",
                            models.CharField(
                                blank=True,
                                help_text='e.g. "verdicts.2.verdict"',
                                max_length=200,
                            ),
                        ),
                        ("old_value", models.JSONField(null=True)),
                        ("new_value", models.JSONField(null=True)),
                        ("note", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("reverted_at", models.DateTimeField(blank=True, null=True)),
                        ("counts_as_flip", models.BooleanField(default=False)),
                        ("prior_review", models.JSONField(blank=True, default=dict)),
                        (
                            "result",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="overrides",
                                to="evals.result",
                            ),
                        ),
                        (
                            "reverted_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "review_override",
                        "ordering": ["result_id", "created_at", "id"],
                        "indexes": [
                            models.Index(
                                fields=["result", "reverted_at"],
                                name="review_over_result__68ffae_idx",
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
