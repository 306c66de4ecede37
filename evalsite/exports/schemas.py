from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import Field

from evalsite.review.schemas import ResultFiltersIn


class ErrorFieldOut(Schema):
    field: str
    message: str


class ErrorOut(Schema):
    """The API's one error body."""

    detail: str
    errors: list[ErrorFieldOut]


class ExportQuery(ResultFiltersIn):
    """The filters of GET /api/runs/{id}/results (inherited, so they never drift) + excel."""

    excel: bool = Field(
        False, description="CSV only: start with a UTF-8 BOM for Excel."
    )

    def to_filters(self) -> dict[str, Any]:
        """As the explorer's `ResultFilters` (the results list maps them the same way)."""
        return {
            "scorer": self.scorer_id,
            "judge_passed": self.judge_passed,
            "final_passed": self.passed,
            "min_score": self.min_score,
            "max_score": self.max_score,
            "reviewed": self.reviewed,
            "overridden": self.overridden,
            "status": self.status,
            "mine": self.assignee == "me",
            "disagree": bool(self.disagree),
            "q": self.q or "",
            "sort": self.sort,
        }
