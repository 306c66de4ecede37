from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from evalsite.datasets.models import Dataset, DatasetMatch, Item


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin[Dataset]):
    list_display = [
        "name",
        "version",
        "project",
        "item_count",
        "file_format",
        "created_at",
    ]
    list_filter = ["file_format"]
    search_fields = ["name"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin[Item]):
    """Read-only: a dataset version's items never change once uploaded (runs,
    exports and compare's stored matchings rely on it); upload a new version."""

    list_display = ["dataset", "index"]
    raw_id_fields = ["dataset"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: Item | None = None
    ) -> bool:
        return False

    def has_delete_permission(
        self, request: HttpRequest, obj: Item | None = None
    ) -> bool:
        return False


@admin.register(DatasetMatch)
class DatasetMatchAdmin(admin.ModelAdmin[DatasetMatch]):
    list_display = ["dataset_a", "dataset_b", "rule", "matched", "created_at"]
    raw_id_fields = ["dataset_a", "dataset_b"]
    # Computed from the datasets' items: deleting one is safe (compare matches
    # again), adding or editing one would make compare join the wrong items. Its
    # pairs (DatasetMatchPair) have a composite primary key, which the admin refuses.
    readonly_fields = [
        "dataset_a",
        "dataset_b",
        "rule",
        "items_a",
        "items_b",
        "matched",
        "only_in_a",
        "only_in_b",
        "no_key_a",
        "no_key_b",
        "duplicates",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: DatasetMatch | None = None
    ) -> bool:
        return False
