from __future__ import annotations

from django.contrib import admin

from evalsite.accounts.admin import ProjectAdmin as BaseProjectAdmin
from evalsite.accounts.models import Project
from evalsite.datasets.admin import DatasetAdmin as BaseDatasetAdmin
from evalsite.datasets.models import Dataset
from evalsite.evals.admin import RunAdmin as BaseRunAdmin
from evalsite.evals.models import Run
from evalsite.review.housekeeping.admin import (
    CascadeDeleteAdmin,
    ProjectCascadeDeleteAdmin,
)
from evalsite.review.models import (
    Guideline,
    LabCandidate,
    LabReplay,
    PairwiseItem,
    Preference,
    QueueEntry,
    QueueFlag,
    Review,
    ReviewQueue,
    SavedFilter,
)


# Runs, datasets and projects are deleted with their queues and answers, which this app owns:
# their admins (registered by their own apps) are replaced here by ones that delete
# through the housekeeping service, as accounts replaces the User admin.
class RunAdmin(CascadeDeleteAdmin[Run], BaseRunAdmin):
    housekeeping_kind = "runs"


class DatasetAdmin(CascadeDeleteAdmin[Dataset], BaseDatasetAdmin):
    housekeeping_kind = "datasets"


admin.site.unregister(Run)
admin.site.register(Run, RunAdmin)
admin.site.unregister(Dataset)
admin.site.register(Dataset, DatasetAdmin)


# A project takes everything of it, runs included (which this app's queues need).
class ProjectAdmin(ProjectCascadeDeleteAdmin, BaseProjectAdmin):
    pass


admin.site.unregister(Project)
admin.site.register(Project, ProjectAdmin)


@admin.register(ReviewQueue)
class ReviewQueueAdmin(CascadeDeleteAdmin[ReviewQueue]):
    housekeeping_kind = "queues"
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


@admin.register(LabCandidate)
class LabCandidateAdmin(admin.ModelAdmin[LabCandidate]):
    list_display = ["name", "project", "scorer", "promoted_to", "created_at"]
    raw_id_fields = ["scorer", "promoted_to"]


@admin.register(LabReplay)
class LabReplayAdmin(admin.ModelAdmin[LabReplay]):
    list_display = ["id", "project", "candidate", "scorer", "items", "created_at"]
    raw_id_fields = ["candidate", "scorer", "current_runs", "candidate_runs"]


@admin.register(QueueFlag)
class QueueFlagAdmin(admin.ModelAdmin[QueueFlag]):
    list_display = ["queue", "flagged_by", "reason", "created_at", "resolved_at"]
    raw_id_fields = ["queue", "entry", "pair"]
