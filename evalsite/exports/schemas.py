from __future__ import annotations

from pydantic import Field

from evalsite.core.schemas import ObjectId
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import SELECTION_MAX_IDS


class ExportQuery(ResultQuery):
    """The result query of GET /api/runs/{id}/results (inherited, so it never drifts)
    + excel + ids."""

    ids: list[ObjectId] | None = Field(
        None,
        max_length=SELECTION_MAX_IDS,
        description="Only these results (repeat the parameter: ids=1&ids=2); each "
        "must be a result of the run, else 400 and nothing is exported.",
    )

    excel: bool = Field(
        False,
        description="CSV only: start with a UTF-8 BOM for Excel (and name the file "
        "…-excel.csv, apart from the plain CSV).",
    )
