"""API schemas of the estimates and the calibration samples."""

from __future__ import annotations

from typing import Literal

from django.urls import reverse
from ninja import Schema
from pydantic import ConfigDict, Field

from evalsite.review.estimates.selectors import ScorerEstimates
from evalsite.review.models import ReviewQueue


class EstimateFigureOut(Schema):
    metric: str
    judge: float | None
    adjusted: float | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    half_width: float | None
    labels: int
    population: int
    human_only: float | None
    human_only_half_width: float | None
    effective_labels: float | None
    labels_added: float | None
    sentence: str


class EstimateSampleOut(Schema):
    queue_id: int
    name: str
    design: str
    size: int
    answered: int


class EstimateUnusedSourceOut(Schema):
    source: str  # a queue's name, or "no queue (…)"
    results: int


class ScorerEstimatesOut(Schema):
    run_scorer_id: int
    name: str
    sample: EstimateSampleOut | None
    samples: list[EstimateSampleOut]
    labels_used: int
    labels_unused: int
    unused_reason: str
    unused_sources: list[EstimateUnusedSourceOut]
    pass_rate: EstimateFigureOut | None
    mean: EstimateFigureOut | None

    @staticmethod
    def resolve_unused_sources(est: ScorerEstimates) -> list[dict[str, object]]:
        return [{"source": source, "results": n} for source, n in est.unused_sources]


class CalibrationSampleIn(Schema):
    model_config = ConfigDict(extra="forbid")
    run_scorer_id: int
    design: Literal["uniform", "stratified", "active"] = "active"
    budget: int = Field(default=50, ge=1, le=5000)
    floor: float = Field(default=0.5, gt=0, le=1)
    strata: Literal["verdict", "score_bin"] = "verdict"
    seed: int = Field(default=0, ge=0)
    name: str = Field(default="", max_length=200)
    blind: bool = True
    overlap: int | None = Field(default=None, ge=1, le=10)
    assign_round_robin: bool = False


class CalibrationSampleOut(Schema):
    id: int
    run_id: int
    name: str
    size: int
    design: dict[str, object]
    url: str

    @staticmethod
    def resolve_url(queue: ReviewQueue) -> str:
        return reverse("review:queue", args=[queue.project_id, queue.pk])
