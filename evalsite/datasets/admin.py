from __future__ import annotations

from django.contrib import admin

from evalsite.datasets.models import Dataset, Item


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
    list_display = ["dataset", "index"]
    raw_id_fields = ["dataset"]
