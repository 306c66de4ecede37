"""API schemas of scorers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field

from evalsite.core.schemas import ObjectId
from evalsite.evals.models import ScorerConfig


class ScorerIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    kind: str
    judge_id: ObjectId | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    threshold: float | None = Field(
        default=None,
        description="Shortcut for options.threshold (fraction of the scale).",
    )


class ScorerPatch(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    judge_id: ObjectId | None = None
    options: dict[str, Any] | None = None
    threshold: float | None = None


class ScorerOut(Schema):
    id: int
    project_id: int
    name: str
    kind: str
    judge_id: int | None
    options: dict[str, Any]
    threshold: float | None
    version: int
    parent_id: int | None
    archived: bool
    created_at: datetime

    @staticmethod
    def resolve_threshold(scorer: ScorerConfig) -> Any:
        return (scorer.options or {}).get("threshold")
