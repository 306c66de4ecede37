"""Reads for exports: access checks and the metadata key set of a dataset."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import Run

User = AbstractBaseUser | AnonymousUser


def export_run_get_for_user(
    *, user: User, pk: int, project_id: int | None = None
) -> Run:
    """The run if `user` is a member of its project (any role may export); 404 otherwise.

    `project_id` (from a page URL) must match, so one project's path never serves another
    project's run.
    """
    run = Run.objects.select_related("project", "dataset").filter(pk=pk).first()
    if run is None or (project_id is not None and run.project_id != project_id):
        raise Http404("No such run.")
    run.project = project_get_for_user(user=user, pk=run.project_id)
    return run


def export_dataset_get_for_user(
    *, user: User, pk: int, project_id: int | None = None
) -> Dataset:
    dataset = Dataset.objects.select_related("project").filter(pk=pk).first()
    if dataset is None or (project_id is not None and dataset.project_id != project_id):
        raise Http404("No such dataset.")
    dataset.project = project_get_for_user(user=user, pk=dataset.project_id)
    return dataset


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


def _order_keys(keys: set[str], columns: list | None) -> list[str]:
    position = {
        name: i for i, name in enumerate(columns or []) if isinstance(name, str)
    }
    return sorted(keys, key=lambda k: (position.get(k, len(position)), k))
