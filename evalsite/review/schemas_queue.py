"""API schemas for the results list, comments and review queues (helper D2)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, model_validator

from evalsite.core.pagination import MAX_OFFSET
from evalsite.review.selectors_explorer import Q_MAX_LENGTH, SORTS

ResultStatus = Literal["pending", "ok", "error", "cancelled"]
SortKey = Literal[tuple(SORTS)]  # type: ignore[valid-type]


class _ExplorerFilterFields(Schema):
    """The explorer filters as API fields, shared by the results list and queues."""

    scorer_id: int | None = None
    passed: bool | None = None
    judge_passed: bool | None = None
    reviewed: bool | None = None
    overridden: bool | None = None
    disagree: bool | None = None
    status: ResultStatus | None = None
    q: str | None = Field(default=None, max_length=Q_MAX_LENGTH)
    # Finite only: a queue stores its filters as JSON, which has no NaN or infinity.
    min_score: float | None = Field(default=None, allow_inf_nan=False)
    max_score: float | None = Field(default=None, allow_inf_nan=False)
    assignee: Literal["me"] | None = None
    sort: SortKey = "item"  # type: ignore[valid-type]


class ResultFiltersIn(_ExplorerFilterFields):
    """Query parameters of GET /api/runs/{id}/results. `scorer_id` is a run scorer id
    (as in the run's aggregates); `passed` is the final (human-adjusted) verdict."""

    @model_validator(mode="after")
    def _range(self) -> ResultFiltersIn:
        if (
            self.min_score is not None
            and self.max_score is not None
            and self.min_score > self.max_score
        ):
            raise ValueError("min_score must not exceed max_score")
        return self


class ResultListIn(ResultFiltersIn):
    """The filters plus limit/offset (the export reuses ResultFiltersIn without them)."""

    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)


class ResultRowOut(Schema):
    id: int
    run_id: int
    item_id: int
    item_index: int
    scorer_id: int
    scorer_name: str
    kind: str
    status: str
    error: str
    judge_score: float | None
    final_score: float | None
    judge_passed: bool | None
    final_passed: bool | None
    human_passed: bool | None
    reviewed: bool
    overridden: bool
    score_overridden: bool
    pass_overridden: bool
    assignee: str | None
    reason: str
    updated_at: datetime

    # Resolved from the select_related row, so a page costs one query.
    @staticmethod
    def resolve_item_index(obj: Any) -> int:
        return obj.item.index

    @staticmethod
    def resolve_scorer_id(obj: Any) -> int:
        return obj.run_scorer_id

    @staticmethod
    def resolve_scorer_name(obj: Any) -> str:
        return obj.run_scorer.name

    @staticmethod
    def resolve_kind(obj: Any) -> str:
        return obj.run_scorer.kind

    @staticmethod
    def resolve_assignee(obj: Any) -> str | None:
        return obj.assignee.get_username() if obj.assignee_id else None


class ResultPageOut(Schema):
    count: int
    items: list[ResultRowOut]


class CommentIn(Schema):
    model_config = ConfigDict(extra="forbid")
    body: str = Field(min_length=1, max_length=10_000)


class CommentOut(Schema):
    id: int
    result_id: int
    user: str | None
    body: str
    created_at: datetime


class QueueFiltersIn(_ExplorerFilterFields):
    """The explorer filters a queue is built from (same names as the results list)."""

    model_config = ConfigDict(extra="forbid")


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
    stratified: dict[str, Any] | None
    size: int
    truncated: bool
    reviewed: int
    assignees: dict[str, int]
    result_ids: list[int]
    estimate: EstimateOut | None
    url: str
    created_at: datetime
