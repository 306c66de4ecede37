"""One trigram index over the searched text, UPPER(input || chr(31) || output), in place
of one per field: the planner weighs a single bitmap scan correctly where it priced the
OR of two above reading the whole dataset (see datasets.selectors.ItemSearchText).

Postgres only, like 0002.
"""

from django.db import migrations

FORWARD = [
    "CREATE INDEX IF NOT EXISTS datasets_item_text_trgm ON datasets_item "
    "USING gin (UPPER(input || chr(31) || output) gin_trgm_ops)",
    "DROP INDEX IF EXISTS datasets_item_input_trgm",
    "DROP INDEX IF EXISTS datasets_item_output_trgm",
    # The planner's estimate for the expression comes from its statistics.
    "ANALYZE datasets_item",
]
BACKWARD = [
    "CREATE INDEX IF NOT EXISTS datasets_item_input_trgm ON datasets_item "
    "USING gin (UPPER(input) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS datasets_item_output_trgm ON datasets_item "
    "USING gin (UPPER(output) gin_trgm_ops)",
    "DROP INDEX IF EXISTS datasets_item_text_trgm",
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
    dependencies = [("datasets", "0002_item_text_search_trgm")]
    operations = [migrations.RunPython(forward, backward)]
