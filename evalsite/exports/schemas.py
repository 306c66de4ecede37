from __future__ import annotations

from pydantic import Field

from evalsite.review.schemas import ResultQuery


class ExportQuery(ResultQuery):
    """The result query of GET /api/runs/{id}/results (inherited, so it never drifts)
    + excel."""

    excel: bool = Field(
        False, description="CSV only: start with a UTF-8 BOM for Excel."
    )
