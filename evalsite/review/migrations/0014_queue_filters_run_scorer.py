"""Stored queue filters name the run scorer `run_scorer`, not `scorer`
(`scorer` ids are scorer configs' only). The value is unchanged: a RunScorer id."""

from __future__ import annotations

from typing import Any

from django.db import migrations

OLD, NEW = "scorer", "run_scorer"


def _rename(apps: Any, old: str, new: str) -> None:
    ReviewQueue = apps.get_model("review", "ReviewQueue")
    queues = ReviewQueue.objects.filter(filters__has_key=old).only("pk", "filters")
    for queue in queues.iterator(chunk_size=500):
        filters = dict(queue.filters)
        filters.setdefault(new, filters.pop(old))
        queue.filters = filters
        queue.save(update_fields=["filters"])


def forwards(apps: Any, schema_editor: Any) -> None:
    _rename(apps, OLD, NEW)


def backwards(apps: Any, schema_editor: Any) -> None:
    _rename(apps, NEW, OLD)


class Migration(migrations.Migration):
    dependencies = [("review", "0013_dataset_match")]

    operations = [migrations.RunPython(forwards, backwards, elidable=True)]
