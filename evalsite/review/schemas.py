"""Review API schemas, grouped by the endpoints that use them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
    model_validator,
)

from evalsite.core.schemas import ObjectId
from evalsite.evals.judges.schemas import JudgeVersionOut
from evalsite.evals.models import Override


class OverrideIn(Schema):
    """{kind: "verdict", path: "verdicts.2.verdict", value, note} |
    {kind: "score", value, note} | {kind: "pass", value, note}.

    expected_version (optional): the result's `version` the client saw; a stale one
    gets 409 instead of applying.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["verdict", "score", "pass"]
    path: str = Field(default="", max_length=200)
    value: bool | int | float | str
    note: str = Field(default="", max_length=2000)
    expected_version: int | None = Field(default=None, ge=0)


class OverrideRevertIn(Schema):
    model_config = ConfigDict(extra="forbid")

    expected_version: int | None = Field(default=None, ge=0)


class OverrideOut(Schema):
    id: int
    result_id: int
    kind: str
    path: str
    old_value: Any = None
    new_value: Any = None
    note: str
    user: str | None
    created_at: datetime
    active: bool
    reverted_at: datetime | None = None
    reverted_by: str | None = None

    @staticmethod
    def resolve_user(override: Override) -> str | None:
        return override.user.get_username() if override.user else None

    @staticmethod
    def resolve_active(override: Override) -> bool:
        return override.reverted_at is None

    @staticmethod
    def resolve_reverted_by(override: Override) -> str | None:
        return override.reverted_by.get_username() if override.reverted_by else None


class JudgeCallOut(Schema):
    id: int
    step: str
    messages: list[dict[str, Any]]
    raw_response: str
    response_format: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float  # the judge's own time
    wait_ms: float  # waiting for a limiter slot, the cache, back-off
    attempts: int
    cache_hit: bool
    # A short reason (status and the judge's one-line message, secrets redacted).
    error: str
    # The judge's whole reply to a failed call, secrets redacted: owners only ("" for
    # everyone else), as a judge may answer with anything, the request's headers too.
    error_body: str = ""


class ItemOut(Schema):
    id: int
    index: int
    input: str
    output: str
    context: list[Any]
    reference: str | None
    metadata: dict[str, Any]
    # Agent data, as GET /api/datasets/{id}/items gives it: "" or null when absent.
    system_prompt: str
    conversation: list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]] | None
    expected_tool_calls: list[Any] | None
    expected_trajectory: list[Any] | None
    baseline_output: str


class ResultFinalOut(Schema):
    """The review state of a result after a change."""

    id: int
    version: int
    status: str
    final_analysis: dict[str, Any] | None = None
    final_score: float | None = None
    final_passed: bool | None = None
    score_overridden: bool
    pass_overridden: bool
    overridden: bool
    reviewed: bool
    human_passed: bool | None = None


class ResultOut(ResultFinalOut):
    run_id: int
    item: ItemOut
    run_scorer_id: int = Field(description="The run scorer's id (RunScorer).")
    scorer_config_id: int | None = Field(
        default=None, description="The scorer config the run scorer snapshots."
    )
    scorer_name: str
    kind: str
    error: str
    analysis: dict[str, Any] | None = None
    judge_score: float | None = None
    judge_passed: bool | None = None
    judge_version: JudgeVersionOut | None = Field(
        default=None, description="The judge version the judge fields were made with."
    )
    judge_answers: list[dict[str, Any]] | None = Field(
        default=None,
        description="A judge asked k times: every answer {score, passed}; "
        "judge_passed is their majority (ties fail).",
    )
    judge_uncertainty: float | None = Field(
        default=None,
        description="Share of the k answers that disagree with the majority (0-0.5).",
    )
    reason: str
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    overrides: list[OverrideOut]
    calls: list[JudgeCallOut]
    blind: str | None = Field(
        None,
        description="Set while the result waits for your answer in a blind queue: "
        "the judge's and the final fields, the overrides and the calls are then "
        "empty, and this says where to answer.",
    )


class AgreementOut(Schema):
    n: int
    accuracy: float | None = None
    kappa: float | None = None
    matrix: dict[str, int]


class HistogramOut(Schema):
    edges: list[float]
    judge: list[int]
    final: list[int]


class ErrorReasonOut(Schema):
    message: str
    count: int


class AggregateOut(Schema):
    run_scorer_id: int = Field(description="The run scorer's id (RunScorer).")
    scorer_config_id: int | None = Field(
        default=None, description="The scorer config the run scorer snapshots."
    )
    name: str
    kind: str
    label: str
    direction: str
    scale: float
    threshold: float | None = None
    total: int
    ok: int
    errors: int
    pending: int
    cancelled: int
    judge_mean: float | None = None
    final_mean: float | None = None
    human_mean: float | None = None
    judge_pass_rate: float | None = None
    final_pass_rate: float | None = None
    human_pass_rate: float | None = None
    reviewed_judge_pass_rate: float | None = None
    reviewed: int
    overridden: int
    active_overrides: int
    verdict_flips: int
    verdict_total: int
    verdict_flip_rate: float | None = None
    agreement: AgreementOut
    histogram: HistogramOut | None = None
    error_reasons: list[ErrorReasonOut]
    moved: str


class OverrideCreatedOut(Schema):
    override: OverrideOut
    result: ResultFinalOut
    aggregates: list[AggregateOut]


class OverrideRevertedOut(Schema):
    override: OverrideOut
    result: ResultFinalOut
    aggregates: list[AggregateOut]


class RescoreIn(Schema):
    """Options of one of the run's scorers; save=false (default) previews only."""

    model_config = ConfigDict(extra="forbid")

    run_scorer_id: ObjectId | None = Field(
        default=None,
        description="The run scorer's id (GET /api/runs/{id} scorers[].id).",
    )
    scorer_id: ObjectId | None = Field(
        default=None,
        description="Or the scorer config's id the run used (scorers[].scorer_id).",
    )
    options: dict[str, Any] = Field(default_factory=dict)
    save: bool = False

    @model_validator(mode="after")
    def _one_scorer(self) -> RescoreIn:
        if self.scorer_id is None and self.run_scorer_id is None:
            raise ValueError("give scorer_id or run_scorer_id")
        return self


class RescoreOut(Schema):
    run_scorer_id: int
    options: dict[str, Any]
    before: AggregateOut
    after: AggregateOut
    changed_scores: int
    changed_passes: int
    saved: bool
    scorer_config_id: int | None = None


class CommentIn(Schema):
    model_config = ConfigDict(extra="forbid")
    body: str = Field(min_length=1, max_length=10_000)


class CommentOut(Schema):
    id: int
    result_id: int
    user: str | None
    body: str
    created_at: datetime

    @staticmethod
    def resolve_user(obj: Any) -> str | None:
        return obj.user.get_username() if obj.user is not None else None
