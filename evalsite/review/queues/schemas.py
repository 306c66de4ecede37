"""Review queue API schemas."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.db.models import Count
from django.urls import reverse
from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
)

from evalsite.review.explorer.schemas import QueueFiltersIn
from evalsite.review.models import QueueEntry, QueueFlag, ReviewQueue
from evalsite.review.queues.selectors import queue_estimate, queue_progress


class StratifiedIn(Schema):
    model_config = ConfigDict(extra="forbid")
    pass_share: float = Field(
        gt=0, le=1, description="Share of judge-passing results, 0–1."
    )
    seed: int = Field(default=0, ge=0)


class QueueIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="", max_length=200)
    filters: QueueFiltersIn = Field(default_factory=QueueFiltersIn)
    source: Literal["filters", "disagreement"] = "filters"
    assign_round_robin: bool = False
    blind: bool = False
    stratified: StratifiedIn | None = None
    overlap: int | None = Field(
        default=None,
        ge=1,
        le=10,
        description="Reviewers who answer each result; default: the project's.",
    )
    final_rule: Literal["single", "majority", "unanimous"] | None = Field(
        default=None,
        description="How answers become the final verdict: 'single' (overlap 1), "
        "'majority' or 'unanimous' (disagreement goes to adjudication; the default "
        "for overlap 2 or more).",
    )


class EstimateOut(Schema):
    population_fail: int
    population_pass: int
    reviewed_fail: int
    reviewed_pass: int
    agree_fail: int
    missed_fail: int
    precision: float | None
    recall: float | None


class QueueOut(Schema):
    id: int
    run_id: int
    name: str
    source: str
    filters: dict[str, Any]
    blind: bool
    overlap: int
    final_rule: str
    decided: int
    adjudicate: int
    stratified: dict[str, Any] | None
    size: int
    archived: bool
    truncated: bool
    reviewed: int
    assignees: dict[str, int]
    result_ids: list[int]
    estimate: EstimateOut | None
    url: str
    created_at: datetime

    @staticmethod
    def resolve_decided(queue: ReviewQueue) -> int:
        return QueueEntry.objects.filter(
            queue=queue, state=QueueEntry.State.DECIDED
        ).count()

    @staticmethod
    def resolve_adjudicate(queue: ReviewQueue) -> int:
        return QueueEntry.objects.filter(
            queue=queue, state=QueueEntry.State.ADJUDICATE
        ).count()

    @staticmethod
    def resolve_stratified(queue: ReviewQueue) -> dict[str, Any] | None:
        return queue.stratified or None

    @staticmethod
    def resolve_reviewed(queue: ReviewQueue) -> int:
        return queue_progress(queue=queue)["reviewed"]

    @staticmethod
    def resolve_assignees(queue: ReviewQueue) -> dict[str, int]:
        return dict(
            QueueEntry.objects.filter(queue=queue, result__assignee__isnull=False)
            .values_list("result__assignee__username")
            .annotate(n=Count("id"))
            .values_list("result__assignee__username", "n")
        )

    @staticmethod
    def resolve_result_ids(queue: ReviewQueue) -> list[int]:
        return list(
            QueueEntry.objects.filter(queue=queue)
            .order_by("position")
            .values_list("result_id", flat=True)
        )

    @staticmethod
    def resolve_estimate(queue: ReviewQueue) -> dict[str, Any] | None:
        estimate = queue_estimate(queue=queue)
        return estimate.__dict__ if estimate else None

    @staticmethod
    def resolve_url(queue: ReviewQueue) -> str:
        return reverse("review:queue", args=[queue.project_id, queue.pk])


class WaitingQueueOut(Schema):
    queue_id: int
    name: str
    kind: str
    waiting: int
    url: str


class WaitingOut(Schema):
    total: int = Field(description="Queue items and assigned results waiting for you.")
    queued: int = Field(description="Items of review and pairwise queues.")
    assigned: int = Field(description="Results assigned to you that are in no queue.")
    queues: list[WaitingQueueOut]


class SkipOut(Schema):
    next_position: int | None = Field(
        description="The next item waiting for you after the skipped one (wrapping "
        "to the start); null when nothing else waits."
    )
    url: str | None


class FlagIn(Schema):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=2000)


class FlagResolveIn(Schema):
    model_config = ConfigDict(extra="forbid")
    note: str = Field(default="", max_length=2000)


class FlagOut(Schema):
    id: int
    queue_id: int
    queue_name: str
    position: int
    result_id: int | None
    reason: str
    flagged_by: str | None
    created_at: datetime
    open: bool
    resolved_by: str | None
    resolved_at: datetime | None
    resolution: str

    @staticmethod
    def resolve_queue_name(flag: QueueFlag) -> str:
        return flag.queue.name

    @staticmethod
    def resolve_result_id(flag: QueueFlag) -> int | None:
        return flag.entry.result_id if flag.entry is not None else None

    @staticmethod
    def resolve_flagged_by(flag: QueueFlag) -> str | None:
        return flag.flagged_by.get_username() if flag.flagged_by else None

    @staticmethod
    def resolve_resolved_by(flag: QueueFlag) -> str | None:
        return flag.resolved_by.get_username() if flag.resolved_by else None

    @staticmethod
    def resolve_open(flag: QueueFlag) -> bool:
        return flag.is_open
