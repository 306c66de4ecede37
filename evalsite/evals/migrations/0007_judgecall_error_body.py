"""A judge's whole reply to a failed call moves to JudgeCall.error_body (owners only),
and error texts already stored are redacted of bearer tokens and key-like tokens
(a judge that echoes request headers put the key in every member's view)."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from scoring.redact import redact_secrets

_BATCH = 500


def _redact(model: Any, filters: dict[str, Any]) -> None:
    """Walk the rows with an error in primary-key order, a bounded batch at a time."""
    last = 0
    while True:
        rows = list(
            model.objects.filter(pk__gt=last, **filters)
            .exclude(error="")
            .order_by("pk")
            .values_list("pk", "error")[:_BATCH]
        )
        if not rows:
            return
        last = rows[-1][0]
        changed = [
            model(pk=pk, error=redact_secrets(error))
            for pk, error in rows
            if redact_secrets(error) != error
        ]
        if changed:
            model.objects.bulk_update(changed, ["error"])


def redact_stored_errors(apps: Any, schema_editor: Any) -> None:
    _redact(apps.get_model("evals", "Result"), {"status": "error"})
    _redact(apps.get_model("evals", "JudgeCall"), {})


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0006_score_range_flags"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgecall",
            name="error_body",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(redact_stored_errors, migrations.RunPython.noop),
    ]
