from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from evalsite.evals.models import (
    BiasAudit,
    Comment,
    JudgeCacheEntry,
    JudgeCall,
    JudgeConnection,
    JudgeVersion,
    Override,
    Result,
    ReviewVersion,
    Run,
    RunScorer,
    ScorerConfig,
)
from evalsite.evals.runs.services import ACTIVE


@admin.register(JudgeConnection)
class JudgeConnectionAdmin(admin.ModelAdmin[JudgeConnection]):
    list_display = ["name", "project", "base_url", "model", "is_offline"]
    # The key is write-only: never shown, not even to staff.
    exclude = ["api_key_encrypted"]


@admin.register(ScorerConfig)
class ScorerConfigAdmin(admin.ModelAdmin[ScorerConfig]):
    list_display = ["name", "kind", "version", "project", "archived"]
    list_filter = ["kind"]


class RunScorerInline(admin.TabularInline[RunScorer, Run]):
    model = RunScorer
    extra = 0


@admin.register(Run)
class RunAdmin(admin.ModelAdmin[Run]):
    list_display = ["__str__", "project", "dataset", "status", "total", "created_at"]
    list_filter = ["status"]
    inlines = [RunScorerInline]

    # Deleting goes through the housekeeping service (review/admin.py replaces this
    # admin with one that does): it refuses a queued or running run and records the
    # deletion in the project's audit log.

    def has_delete_permission(
        self, request: HttpRequest, obj: Run | None = None
    ) -> bool:
        if obj is not None and obj.status in ACTIVE:
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin[Result]):
    list_display = [
        "id",
        "run",
        "run_scorer",
        "status",
        "judge_score",
        "final_score",
        "reviewed",
    ]
    list_filter = ["status", "reviewed", "overridden"]
    raw_id_fields = ["run", "item", "run_scorer", "assignee"]
    # Scores and review state change only through the judge and the review services,
    # which recompute, audit and keep the aggregates' counts and versions in step.
    readonly_fields = [
        "status",
        "analysis",
        "overridable_count",
        "judge_score",
        "judge_passed",
        "final_analysis",
        "final_score",
        "final_passed",
        "score_overridden",
        "pass_overridden",
        "overridden",
        "active_override_count",
        "verdict_flip_count",
        "reviewed",
        "human_passed",
        "reviewed_by",
        "reviewed_at",
        "version",
    ]


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin[JudgeCall]):
    list_display = ["result", "step", "latency_ms", "cache_hit", "error"]
    raw_id_fields = ["result"]


admin.site.register(RunScorer)
admin.site.register(JudgeCacheEntry)


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


@admin.register(ReviewVersion)
class ReviewVersionAdmin(admin.ModelAdmin[ReviewVersion]):
    list_display = ["run_scorer", "version"]
    # Bumped by the review services only: a hand edit would desync the cached counts.
    readonly_fields = ["run_scorer", "version"]


@admin.register(JudgeVersion)
class JudgeVersionAdmin(admin.ModelAdmin[JudgeVersion]):
    list_display = ["label", "project", "kind", "number", "created_at"]
    list_filter = ["kind"]
    readonly_fields = ["digest", "spec"]


@admin.register(BiasAudit)
class BiasAuditAdmin(admin.ModelAdmin[BiasAudit]):
    list_display = ["id", "project", "run", "run_scorer", "sample_size", "created_at"]
    raw_id_fields = ["run", "run_scorer", "audit_run"]
