"""The audit log moves to `accounts` (one log, project-wide); its table stays.

Here the run and result foreign keys lose their database constraints, so an event
outlives the run or result it names, and `review` lets go of the model; the
`accounts` migration that depends on this one takes the model over, with the two
columns as plain indexed integers."""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def _drop_dangling(apps: Any, schema_editor: Any) -> None:
    """Going back: events that outlived their run or result lose the reference, so
    the foreign key constraints can be restored."""
    AuditEvent = apps.get_model("review", "AuditEvent")
    Run = apps.get_model("evals", "Run")
    Result = apps.get_model("evals", "Result")
    events = AuditEvent.objects.all()
    events.filter(run_id__isnull=False).exclude(
        run_id__in=Run.objects.values("pk")
    ).update(run_id=None)
    events.filter(result_id__isnull=False).exclude(
        result_id__in=Result.objects.values("pk")
    ).update(result_id=None)
    if schema_editor.connection.vendor == "postgresql":
        # The updates leave deferred constraint checks pending, and Postgres alters
        # no table with checks pending: run them now.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0014_queue_filters_run_scorer"),
        ("evals", "0007_judgecall_error_body"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="run",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="evals.run",
            ),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="result",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="evals.result",
            ),
        ),
        migrations.RunPython(migrations.RunPython.noop, _drop_dangling, elidable=True),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AuditEvent")],
            database_operations=[],
        ),
    ]
