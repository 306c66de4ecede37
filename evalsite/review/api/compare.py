"""Review API: two runs of one dataset side by side."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from ninja import Query, Router

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.selectors import run_get_for_user
from evalsite.review import selectors
from evalsite.review.schemas import CompareOut, CompareQueryIn

router = Router(tags=["review"])


@router.get("/runs/{run_id}/compare/{other_id}", response=CompareOut)
def runs_compare(
    request: AuthenticatedHttpRequest,
    run_id: int,
    other_id: int,
    query: Query[CompareQueryIn],
) -> dict[str, Any]:
    run_a = run_get_for_user(user=request.user, pk=run_id)
    run_b = run_get_for_user(user=request.user, pk=other_id)
    if run_a.project_id != run_b.project_id:
        raise Http404("No such run.")
    if run_a.dataset_id != run_b.dataset_id:
        raise ApplicationError(
            "Compare runs of the same dataset.",
            field_errors={"other_id": f"run {run_b.pk} is on another dataset"},
        )
    comparison = selectors.runs_compare(run_a=run_a, run_b=run_b)
    pair = comparison.pair_for(query.scorer_id)
    items: list[dict[str, Any]] = []
    count = 0
    if pair is not None:
        rows = comparison.rows(pair=pair, only=query.only)
        count = rows.count()
        for row in rows[query.offset : query.offset + query.limit]:
            items.append(
                {
                    "item_id": row.item_id,
                    "item_index": row.item.index,
                    "a_result_id": row.pk,
                    "b_result_id": row.b_id,
                    "a_status": row.status,
                    "b_status": row.b_status,
                    "a_score": row.a_score,
                    "b_score": row.b_score,
                    "delta": row.delta,
                    "a_passed": row.final_passed,
                    "b_passed": row.b_passed,
                    "regression": row.flip == 2 or (row.badness or 0) > 0,
                    "pass_flip": {2: "pass_to_fail", 1: "fail_to_pass"}.get(
                        row.flip, ""
                    ),
                }
            )
    return {
        "run_a": run_a.pk,
        "run_b": run_b.pk,
        "pairs": [
            {
                "scorer_id": p.a.pk,
                "b_scorer_id": p.b.pk,
                "name": p.a.name,
                "kind": p.a.kind,
                "direction": p.direction,
                **p.summary(),
            }
            for p in comparison.pairs
        ],
        "scorer_id": pair.a.pk if pair else None,
        "count": count,
        "items": items,
    }
