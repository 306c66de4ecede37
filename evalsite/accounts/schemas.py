from __future__ import annotations

from datetime import datetime

from ninja import Schema
from pydantic import ConfigDict, Field


class ProjectIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str = ""


class ProjectOut(Schema):
    id: int
    name: str
    description: str
    blind_review: bool
    reviewers_can_start_runs: bool
    reviewers_can_save_rescore: bool
    created_at: datetime
    role: str | None = None


class MemberIn(Schema):
    model_config = ConfigDict(extra="forbid")
    username: str
    role: str


class MemberOut(Schema):
    id: int
    username: str
    role: str
