"""The index progress and agreement group a queue's entries by: (queue, state, pass
answers, fail answers), in place of (queue, pass answers, fail answers), which
lacked the state the card's progress groups by too.

An answer's response and the queue card group the queue's entries by these four
(review.team.selectors.overlap_counts): with them all in one index that is an
index-only scan, 12 ms instead of 30 ms (a sequential scan) on bench_million's
50k-entry overlap-3 queue at load average 6-8.

Built CONCURRENTLY on Postgres (so outside a transaction: atomic = False), like the
result indexes of 0019: reviewers keep answering during a deploy.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

NEW = "review_entry_shape_idx"
NEW_COLUMNS = "queue_id, state, answers_pass, answers_fail"
OLD = "review_entry_agreement_idx"
OLD_COLUMNS = "queue_id, answers_pass, answers_fail"


def _concurrently(schema_editor: Any) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


def _create(schema_editor: Any, name: str, columns: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        # A concurrent build that failed leaves an INVALID index behind, which IF
        # NOT EXISTS would keep: drop it so it is built again.
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = %s AND NOT i.indisvalid",
                [name],
            )
            invalid = cursor.fetchone() is not None
        if invalid:
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    schema_editor.execute(
        f"CREATE INDEX {_concurrently(schema_editor)}IF NOT EXISTS {name} "
        f"ON review_queueentry ({columns})"
    )


def _drop(schema_editor: Any, name: str) -> None:
    schema_editor.execute(f"DROP INDEX {_concurrently(schema_editor)}IF EXISTS {name}")


def forwards(apps: Any, schema_editor: Any) -> None:
    _create(schema_editor, NEW, NEW_COLUMNS)
    _drop(schema_editor, OLD)


def backwards(apps: Any, schema_editor: Any) -> None:
    _create(schema_editor, OLD, OLD_COLUMNS)
    _drop(schema_editor, NEW)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("review", "0023_result_assigned_waiting_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards)],
            state_operations=[
                migrations.RemoveIndex(model_name="queueentry", name=OLD),
                migrations.AddIndex(
                    model_name="queueentry",
                    index=models.Index(
                        fields=["queue", "state", "answers_pass", "answers_fail"],
                        name=NEW,
                    ),
                ),
            ],
        )
    ]
