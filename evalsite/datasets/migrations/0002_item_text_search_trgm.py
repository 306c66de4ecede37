"""Trigram indexes so the explorer's text search (UPPER(...) LIKE '%q%') stays fast on Postgres.

Postgres only: SQLite has no trigram indexes and scans, which is fine at its scale.
"""

from django.db import migrations

FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS datasets_item_input_trgm ON datasets_item USING gin (UPPER(input) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS datasets_item_output_trgm ON datasets_item USING gin (UPPER(output) gin_trgm_ops)",
]
BACKWARD = [
    "DROP INDEX IF EXISTS datasets_item_input_trgm",
    "DROP INDEX IF EXISTS datasets_item_output_trgm",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in FORWARD:
            schema_editor.execute(sql)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in BACKWARD:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("datasets", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
