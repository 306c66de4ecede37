from __future__ import annotations

from ninja import Schema
from pydantic import Field

from evalsite.review.schemas import ResultQuery


class ErrorFieldOut(Schema):
    field: str
    message: str


class ErrorOut(Schema):
    """The API's one error body."""

    detail: str
    errors: list[ErrorFieldOut]


class ExportQuery(ResultQuery):
    """The result query of GET /api/runs/{id}/results (inherited, so it never drifts)
    + excel."""

    excel: bool = Field(
        False, description="CSV only: start with a UTF-8 BOM for Excel."
    )
