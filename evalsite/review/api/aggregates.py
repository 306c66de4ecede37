"""Review API: a run's per-scorer aggregates."""

from __future__ import annotations

from typing import Any

from ninja import Router

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.results import aggregates
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.schemas import AggregateOut

router = Router(tags=["review"])


@router.get("/runs/{run_id}/aggregates", response=list[AggregateOut])
def run_aggregates(
    request: AuthenticatedHttpRequest, run_id: int
) -> list[dict[str, Any]]:
    run = run_get_for_user(user=request.user, pk=run_id)
    return [a.as_dict() for a in aggregates.run_aggregates(run_id=run.pk)]
