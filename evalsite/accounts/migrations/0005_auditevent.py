"""`accounts` takes over the audit log from `review` (same table, same rows): the run
and result references become plain indexed integers (review 0015 dropped their
constraints), and the log gains what a project-wide log needs: whose access an
event changed (`subject`) and what it names (`object_type`, `object_id`,
`object_label`)."""

from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_invitation_invitee"),
        ("review", "0015_auditevent_to_accounts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditEvent",
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
                        ("action", models.CharField(max_length=40)),
                        (
                            "run_id",
                            models.BigIntegerField(
                                blank=True, db_index=True, null=True
                            ),
                        ),
                        (
                            "result_id",
                            models.BigIntegerField(
                                blank=True, db_index=True, null=True
                            ),
                        ),
                        ("summary", models.CharField(blank=True, max_length=500)),
                        ("before", models.JSONField(blank=True, null=True)),
                        ("after", models.JSONField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "actor",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="audit_events",
                                to="accounts.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "review_auditevent",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(
                                fields=["run_id", "-created_at"],
                                name="review_audi_run_id_2d07c5_idx",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.AddField(
            model_name="auditevent",
            name="subject",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="object_type",
            field=models.CharField(blank=True, default="", max_length=40),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="auditevent",
            name="object_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="object_label",
            field=models.CharField(blank=True, default="", max_length=200),
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                fields=["project", "-created_at"], name="accounts_audit_project_idx"
            ),
        ),
    ]
