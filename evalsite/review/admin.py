from __future__ import annotations

from django.contrib import admin

from evalsite.review.models import (
    AuditEvent,
    Comment,
    Override,
    QueueEntry,
    ReviewQueue,
    ReviewVersion,
)


@admin.register(Override)
class OverrideAdmin(admin.ModelAdmin[Override]):
    list_display = [
        "result",
        "kind",
        "path",
        "new_value",
        "user",
        "created_at",
        "reverted_at",
    ]
    raw_id_fields = ["result"]


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin[Comment]):
    list_display = ["result", "user", "created_at"]
    raw_id_fields = ["result"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    list_display = ["action", "actor", "project", "run", "result", "created_at"]
    list_filter = ["action"]
    raw_id_fields = ["run", "result"]


@admin.register(ReviewQueue)
class ReviewQueueAdmin(admin.ModelAdmin[ReviewQueue]):
    list_display = ["name", "run", "blind", "created_by", "created_at"]
    raw_id_fields = ["run"]


@admin.register(QueueEntry)
class QueueEntryAdmin(admin.ModelAdmin[QueueEntry]):
    list_display = ["queue", "position", "result"]
    raw_id_fields = ["queue", "result"]


@admin.register(ReviewVersion)
class ReviewVersionAdmin(admin.ModelAdmin[ReviewVersion]):
    list_display = ["run_scorer", "version"]
    # Bumped by the review services only: a hand edit would desync the cached counts.
    readonly_fields = ["run_scorer", "version"]
