from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from evalsite.review.models import (
    Comment,
    DatasetMatch,
    Guideline,
    Override,
    PairwiseItem,
    Preference,
    QueueEntry,
    Review,
    ReviewQueue,
    ReviewVersion,
    SavedFilter,
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


@admin.register(ReviewQueue)
class ReviewQueueAdmin(admin.ModelAdmin[ReviewQueue]):
    list_display = [
        "name",
        "run",
        "blind",
        "overlap",
        "final_rule",
        "created_by",
        "created_at",
    ]
    raw_id_fields = ["run"]


@admin.register(QueueEntry)
class QueueEntryAdmin(admin.ModelAdmin[QueueEntry]):
    list_display = ["queue", "position", "result", "state", "answers"]
    list_filter = ["state"]
    raw_id_fields = ["queue", "result"]


@admin.register(ReviewVersion)
class ReviewVersionAdmin(admin.ModelAdmin[ReviewVersion]):
    list_display = ["run_scorer", "version"]
    # Bumped by the review services only: a hand edit would desync the cached counts.
    readonly_fields = ["run_scorer", "version"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin[Review]):
    list_display = ["queue", "result", "reviewer", "kind", "passed", "created_at"]
    list_filter = ["kind"]
    raw_id_fields = ["queue", "result"]
    # Answers are written by the review services, which apply the queue's rule; an
    # edit here would leave a decided result out of step with its answers.
    readonly_fields = [
        "queue",
        "result",
        "reviewer",
        "kind",
        "passed",
        "flips",
        "score",
        "note",
        "guideline",
        "seconds",
    ]


@admin.register(Guideline)
class GuidelineAdmin(admin.ModelAdmin[Guideline]):
    list_display = ["project", "queue", "version", "created_by", "created_at"]
    raw_id_fields = ["queue"]
    # Versions are never edited in place: reviews record the one they were made under.
    readonly_fields = ["project", "queue", "version", "body", "created_by"]


@admin.register(SavedFilter)
class SavedFilterAdmin(admin.ModelAdmin[SavedFilter]):
    list_display = ["name", "user", "project", "created_at"]


@admin.register(PairwiseItem)
class PairwiseItemAdmin(admin.ModelAdmin[PairwiseItem]):
    list_display = ["queue", "position", "a_left", "answers"]
    raw_id_fields = ["queue", "item_a", "item_b"]
    # The order shown and the answer counts are the analysis's data: read-only.
    readonly_fields = [
        "queue",
        "position",
        "item_a",
        "item_b",
        "a_left",
        "match_value",
        "answers",
        "answers_a",
        "answers_b",
        "answers_tie",
    ]


@admin.register(Preference)
class PreferenceAdmin(admin.ModelAdmin[Preference]):
    list_display = ["queue", "pair", "reviewer", "choice", "side", "created_at"]
    list_filter = ["choice", "side"]
    # Written by the pairwise services with the pair's counts and the audit log.
    readonly_fields = [
        "queue",
        "pair",
        "reviewer",
        "choice",
        "side",
        "a_left",
        "reason",
        "guideline",
        "seconds",
    ]


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
