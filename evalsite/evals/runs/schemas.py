from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse
from ninja import Schema
from pydantic import ConfigDict, Field

from evalsite.core.schemas import ObjectId
from evalsite.evals.judges.schemas import JudgeVersionOut, RateBoundOut
from evalsite.evals.models import Run, RunScorer
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.runs.selectors import RunProgress, run_error_groups, run_progress


class RunIn(Schema):
    model_config = ConfigDict(extra="forbid")
    dataset_id: ObjectId
    scorer_ids: list[ObjectId] = Field(min_length=1, max_length=1000)
    name: str = ""


class RunStartedOut(Schema):
    id: int
    status: str
    total: int
    url: str

    @staticmethod
    def resolve_url(run: Run) -> str:
        return reverse("api:run_detail", kwargs={"run_id": run.pk})


class ProgressOut(Schema):
    total: int
    done: int
    ok: int
    errors: int
    pending: int
    cancelled: int
    percent: float
    rate: float | None
    eta_seconds: float | None
    in_flight: float = Field(
        default=0.0,
        description="Mean calls the judges are working on lately (their own time).",
    )
    calls_per_second: float = 0.0
    throttled: int = 0
    server_errors: int = 0
    judge_unreachable_seconds: float | None = Field(
        default=None,
        description="How long the judge has been unreachable while running (null: "
        "it answers); results fail after judge_outage_seconds.",
    )
    judge_outage_seconds: float = 0.0
    judge_bounds: list[RateBoundOut] = Field(default_factory=list)

    @staticmethod
    def resolve_percent(progress: RunProgress) -> float:
        return round(progress.percent, 1)

    @staticmethod
    def resolve_judge_unreachable_seconds(progress: RunProgress) -> float | None:
        return progress.unreachable_seconds

    @staticmethod
    def resolve_judge_outage_seconds(progress: RunProgress) -> float:
        return progress.outage_seconds

    @staticmethod
    def resolve_judge_bounds(progress: RunProgress) -> list[dict[str, Any]]:
        return [bound.as_dict() for bound in progress.bounds]


class RunScorerOut(Schema):
    id: int
    scorer_id: int | None
    name: str
    kind: str
    options: dict[str, Any]
    judge: dict[str, Any]
    judge_version: JudgeVersionOut | None = Field(
        default=None, description="The judge this run scorer judges with."
    )

    @staticmethod
    def resolve_judge(run_scorer: RunScorer) -> Any:
        return run_scorer.judge_snapshot


class ErrorGroupOut(Schema):
    run_scorer_id: int
    scorer_name: str
    message: str
    count: int


class RunOut(Schema):
    id: int
    project_id: int
    dataset_id: int
    rejudge_of_id: int | None = Field(
        default=None, description="The run this one judged again (re-judge)."
    )
    name: str
    status: str
    error: str
    total: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    archived: bool
    progress: ProgressOut

    @staticmethod
    def resolve_name(run: Run) -> str:
        return str(run)

    @staticmethod
    def resolve_progress(run: Run) -> RunProgress:
        # A list sets run.progress from one query for all its runs (run_progress_many).
        return getattr(run, "progress", None) or run_progress(run=run)


class RunDetailOut(RunOut):
    scorers: list[RunScorerOut]
    aggregates: list[dict[str, Any]]
    errors_by_message: list[ErrorGroupOut]

    @staticmethod
    def resolve_scorers(run: Run) -> list[RunScorer]:
        return list(run.run_scorers.select_related("judge_version"))

    @staticmethod
    def resolve_aggregates(run: Run) -> list[dict[str, Any]]:
        return [agg.as_dict() for agg in run_aggregates(run_id=run.pk)]

    @staticmethod
    def resolve_errors_by_message(run: Run) -> list[Any]:
        return list(run_error_groups(run=run))


class RetryOut(Schema):
    """Read from the run, with `retried` set on it by the endpoint."""

    id: int
    status: str
    retried: int
