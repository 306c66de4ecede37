"""Reads for exports: the metadata key set of a dataset (access goes through the
owning apps' `run_get_for_user` and `dataset_get_for_user`)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from evalsite.datasets.models import Dataset, Item


def dataset_metadata_keys(*, dataset: Dataset) -> list[str]:
    """Every top-level metadata key used by any item of the dataset, in a stable order.

    Keys come from one DISTINCT query in the database (jsonb_object_keys on Postgres,
    json_each on SQLite) so a 100k-item dataset costs one scan, not 100k Python dicts.
    Order: the file's column order where the key was a column, then the rest sorted.
    """
    table = Item._meta.db_table
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT DISTINCT k FROM (SELECT jsonb_object_keys(metadata) AS k FROM {table}"
            " WHERE dataset_id = %s AND jsonb_typeof(metadata) = 'object') AS keys"
        )
    elif connection.vendor == "sqlite":
        sql = (
            f"SELECT DISTINCT j.key FROM {table}, json_each({table}.metadata) AS j"
            f" WHERE {table}.dataset_id = %s AND json_type({table}.metadata) = 'object'"
        )
    else:  # pragma: no cover - only Postgres and SQLite are supported
        keys: set[str] = set()
        for meta in (
            Item.objects.filter(dataset=dataset)
            .values_list("metadata", flat=True)
            .iterator(chunk_size=2000)
        ):
            if isinstance(meta, dict):
                keys.update(meta)
        return _order_keys(keys, dataset.columns)
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset.pk])
        found = {row[0] for row in cursor.fetchall()}
    return _order_keys(found, dataset.columns)


def _order_keys(keys: set[str], columns: list[Any] | None) -> list[str]:
    position = {
        name: i for i, name in enumerate(columns or []) if isinstance(name, str)
    }
    return sorted(keys, key=lambda k: (position.get(k, len(position)), k))
