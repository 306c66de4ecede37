"""Team review API schemas: answers, adjudication, agreement."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse
from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
)

from evalsite.review.schemas import AggregateOut


class AnswerIn(Schema):
    """One reviewer's answer in an overlap queue (or an adjudicator's decision)."""

    model_config = ConfigDict(extra="forbid")
    passed: bool | None = None
    flips: dict[str, Any] = Field(
        default_factory=dict,
        description='Verdicts set differently from the judge: {"verdicts.2.verdict": "no"}.',
    )
    score: float | None = None
    note: str = Field(default="", max_length=5000)
    seconds: float | None = Field(
        default=None, ge=0, description="Time spent on the item, if measured."
    )


class ReviewOut(Schema):
    id: int
    kind: str
    reviewer: str | None
    passed: bool | None
    flips: dict[str, Any]
    score: float | None
    note: str
    guideline_version: int | None
    seconds: float | None
    created_at: datetime
    updated_at: datetime


class EntryReviewsOut(Schema):
    queue_id: int
    position: int
    result_id: int
    state: str
    answers: int
    overlap: int
    final_rule: str
    decision: dict[str, Any]
    visible: bool
    reviews: list[ReviewOut]
    queue_agreement: dict[str, Any]
    aggregates: list[AggregateOut] = Field(
        default_factory=list,
        description="The result's scorer's run aggregates after the answer (POST only).",
    )


class AdjudicationEntryOut(Schema):
    """A queue entry waiting for an adjudicator (read from a QueueEntry)."""

    queue_id: int
    queue_name: str
    position: int
    result_id: int
    item_index: int
    scorer: str
    disagreements: list[str]
    url: str

    @staticmethod
    def resolve_queue_name(entry: Any) -> str:
        return str(entry.queue.name)

    @staticmethod
    def resolve_item_index(entry: Any) -> int:
        return int(entry.result.item.index)

    @staticmethod
    def resolve_scorer(entry: Any) -> str:
        return str(entry.result.run_scorer.name)

    @staticmethod
    def resolve_disagreements(entry: Any) -> list[str]:
        return [str(d) for d in entry.decision.get("disagreements", [])]

    @staticmethod
    def resolve_url(entry: Any) -> str:
        return reverse(
            "review:adjudicate",
            args=[entry.queue.project_id, entry.queue_id, entry.position],
        )


class AgreementFigureOut(Schema):
    value: float | None
    items: int
    ci_low: float | None
    ci_high: float | None


class KappaPairOut(AgreementFigureOut):
    reviewers: list[str]


class ReviewerStatsOut(Schema):
    username: str
    answered: int
    median_seconds: float | None
    with_final: float | None
    with_final_items: int
    with_judge: float | None
    with_judge_items: int


class HumanAgreementOut(Schema):
    scope: str
    scope_id: int
    name: str
    reviewers: int
    percent_agreement: AgreementFigureOut
    alpha_pass: AgreementFigureOut
    alpha_verdicts: AgreementFigureOut
    alpha_score: AgreementFigureOut
    kappa_pairs: list[KappaPairOut]
    per_reviewer: list[ReviewerStatsOut]
