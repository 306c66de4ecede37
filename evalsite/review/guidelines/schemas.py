"""Guideline API schemas."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
)

from evalsite.review.guidelines.selectors import (
    GuidelineScope,
    guideline_current,
    guideline_history,
    guideline_html,
)
from evalsite.review.models import Guideline


class GuidelineIn(Schema):
    """The next version of a project's or queue's guidelines (markdown).

    expected_version (optional): the version the client last read (0 = none yet); a
    stale one gets 409 instead of replacing someone else's newer text.
    """

    model_config = ConfigDict(extra="forbid")

    # At most 50,000 characters: the service checks it (400 with a field error), so
    # the form and the API share one rule.
    body: str
    expected_version: int | None = Field(default=None, ge=0)


class GuidelineOut(Schema):
    id: int
    scope: Literal["project", "queue"]
    queue_id: int | None
    version: int
    body: str
    html: str = Field(
        description="The body rendered and sanitised, as reviewers see it."
    )
    created_by: str | None
    created_at: datetime

    @staticmethod
    def resolve_scope(guideline: Guideline) -> str:
        return "queue" if guideline.queue_id is not None else "project"

    @staticmethod
    def resolve_html(guideline: Guideline) -> str:
        return str(guideline_html(guideline))

    @staticmethod
    def resolve_created_by(guideline: Guideline) -> str | None:
        user = guideline.created_by
        return user.get_username() if user else None


class GuidelinesOut(Schema):
    project_id: int
    queue_id: int | None
    current: GuidelineOut | None = Field(
        description="What reviewers see: a queue's own latest version, else the project's."
    )
    versions: list[GuidelineOut] = Field(
        description="This scope's own versions, newest first (at most 50)."
    )

    @staticmethod
    def resolve_project_id(scope: GuidelineScope) -> int:
        return scope.project.pk

    @staticmethod
    def resolve_queue_id(scope: GuidelineScope) -> int | None:
        return scope.queue.pk if scope.queue is not None else None

    @staticmethod
    def resolve_current(scope: GuidelineScope) -> Guideline | None:
        return guideline_current(
            project_id=scope.project.pk,
            queue_id=scope.queue.pk if scope.queue is not None else None,
        )

    @staticmethod
    def resolve_versions(scope: GuidelineScope) -> list[Guideline]:
        return list(
            guideline_history(
                project_id=scope.project.pk,
                queue_id=scope.queue.pk if scope.queue is not None else None,
            )
        )
