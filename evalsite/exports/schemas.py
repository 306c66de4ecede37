from __future__ import annotations

from typing import Literal

from ninja import Schema
from pydantic import Field


class ErrorFieldOut(Schema):
    field: str
    message: str


class ErrorOut(Schema):
    """The API's one error body."""

    detail: str
    errors: list[ErrorFieldOut]


class ExportQuery(Schema):
    """The results explorer's filters (same names as the page's query string) + excel.

    Declared here for the OpenAPI docs; the explorer's own form validates them again
    (evalsite.review.forms_queue.ExplorerFilterForm), so the export and the page agree.
    """

    excel: bool = Field(
        False, description="CSV only: start with a UTF-8 BOM for Excel."
    )
    scorer: int | None = Field(
        None, description="RunScorer id (see GET /api/runs/{id})."
    )
    judge: Literal["pass", "fail", ""] | None = Field(
        None, description="Judge verdict."
    )
    final: Literal["pass", "fail", ""] | None = Field(
        None, description="Final verdict."
    )
    min_score: float | None = Field(None, description="Final score ≥.")
    max_score: float | None = Field(None, description="Final score ≤.")
    reviewed: Literal["yes", "no", ""] | None = None
    overridden: Literal["yes", "no", ""] | None = None
    status: Literal["pending", "ok", "error", "cancelled", ""] | None = None
    mine: bool = Field(False, description="Only results assigned to me.")
    disagree: bool = Field(False, description="Final verdict differs from the judge's.")
    q: str | None = Field(
        None, max_length=200, description="Text search in input and output."
    )
    sort: str | None = Field(
        None,
        max_length=20,
        description="item, -item, score, -score, final, -final, updated, -updated",
    )
