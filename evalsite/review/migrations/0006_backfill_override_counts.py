"""Fill Result.active_override_count / verdict_flip_count from the existing overrides."""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Count, Q


def backfill(apps: Any, schema_editor: Any) -> None:
    Override = apps.get_model("review", "Override")
    Result = apps.get_model("evals", "Result")
    counts = (
        Override.objects.filter(reverted_at__isnull=True)
        .values("result_id")
        .annotate(active=Count("id"), flips=Count("id", filter=Q(counts_as_flip=True)))
    )
    for row in counts.iterator(chunk_size=2000):
        Result.objects.filter(pk=row["result_id"]).update(
            active_override_count=row["active"], verdict_flip_count=row["flips"]
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0003_result_override_counts"),
        ("review", "0005_result_touched_index"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
