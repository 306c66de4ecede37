"""Override counts on the result rows, and a partial index on the reviewed ones.

run_aggregates counts the review side of a run scorer (ok results that are reviewed or
overridden) apart from the judge side, so an override recounts only the touched rows.
The override counts it needs live on Result (evals 0003), filled here from the existing
overrides; the partial index holds exactly the touched rows with every column the
count reads, so it stays small however large the run is.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Count, Q

INDEX = "review_result_touched_idx"
COLUMNS = (
    "run_scorer_id, reviewed, overridden, judge_passed, final_passed, "
    "judge_score, final_score, active_override_count, verdict_flip_count, "
    "overridable_count"
)


def backfill_override_counts(apps: Any, schema_editor: Any) -> None:
    Override = apps.get_model("review", "Override")
    Result = apps.get_model("evals", "Result")
    counts = (
        Override.objects.filter(reverted_at__isnull=True)
        .values("result_id")
        .annotate(active=Count("id"), flips=Count("id", filter=Q(counts_as_flip=True)))
        .order_by("result_id")
    )
    for row in counts.iterator(chunk_size=2000):
        Result.objects.filter(pk=row["result_id"]).update(
            active_override_count=row["active"], verdict_flip_count=row["flips"]
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evals", "0003_result_override_counts"),
        ("review", "0004_result_aggregate_index"),
    ]

    operations = [
        migrations.RunPython(backfill_override_counts, migrations.RunPython.noop),
        migrations.RunSQL(
            sql=(
                f"CREATE INDEX IF NOT EXISTS {INDEX} ON evals_result ({COLUMNS}) "
                "WHERE status = 'ok' AND (reviewed OR overridden)"
            ),
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        ),
    ]
