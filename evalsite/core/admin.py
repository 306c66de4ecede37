from __future__ import annotations

from django.contrib import admin

from evalsite.core.models import WorkerPing


@admin.register(WorkerPing)
class WorkerPingAdmin(admin.ModelAdmin[WorkerPing]):
    list_display = ["marker", "hostname", "created_at"]
