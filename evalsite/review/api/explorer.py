"""Review API: a run's results, filtered and sorted like the explorer page."""

from __future__ import annotations

from typing import Any

from ninja import Query, Router

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.selectors import run_get_for_user
from evalsite.review.schemas import ResultListIn, ResultPageOut
from evalsite.review.selectors.explorer import results_filter, results_page

router = Router(tags=["review"])


@router.get("/runs/{run_id}/results", response=ResultPageOut)
def result_list(
    request: AuthenticatedHttpRequest,
    run_id: int,
    filters: ResultListIn = Query(...),  # type: ignore[type-arg]  # noqa: B008 - ninja types Query as an Annotated alias
) -> dict[str, Any]:
    """Filtered results, `{"items", "count"}` like every other list. Paginated by hand:
    ninja's @paginate wrapper breaks postponed annotations of a Query schema."""
    run = run_get_for_user(user=request.user, pk=run_id)
    qs = results_filter(run=run, query=filters, user=request.user)
    return {
        "count": qs.count(),
        "items": results_page(qs, offset=filters.offset, limit=filters.limit),
    }
