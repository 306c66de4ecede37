"""Compare API: 2–4 runs compared, run A the baseline, items matched across datasets."""

from __future__ import annotations

from typing import Any

from ninja import Query, Router

from evalsite.compare import selectors
from evalsite.compare.schemas import CompareOut, CompareQueryIn
from evalsite.compare.selectors import STATS_METHODS, ScorerDelta, compare_rows_mask
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.datasets.matching.selectors import MatchSpec
from evalsite.evals.runs.selectors import run_get_for_user

router = Router(tags=["compare"])


def _pair(d: ScorerDelta) -> dict[str, Any]:
    return {
        "run_scorer_id": d.a.pk,
        "b_run_scorer_id": d.b.pk,
        "name": d.a.name,
        "kind": d.a.kind,
        "direction": d.direction,
        **d.summary(),
    }


@router.get("/runs/{run_id}/compare/{other_id}", response=CompareOut)
def runs_compare(
    request: AuthenticatedHttpRequest,
    run_id: int,
    other_id: int,
    query: Query[CompareQueryIn],
) -> dict[str, Any]:
    """Run {run_id} (A) against {other_id} (B) and the optional `also` runs (C, D):
    per scorer the mean and pass-rate deltas with their tests, and one run's matched
    items against A (`against`, default B), regressions first. Every run must be of
    run A's project (else 404); items match item by item on one dataset, else by
    `match`/`key` (a duplicate key is a 400 naming it)."""
    run_a = run_get_for_user(user=request.user, pk=run_id)
    runs = [run_a] + [
        run_get_for_user(user=request.user, pk=pk, project_id=run_a.project_id)
        for pk in [other_id, *query.also]
    ]
    spec = MatchSpec(mode=query.match, key=query.key)
    comparison = selectors.runs_compare(runs=runs, spec=spec)
    candidate = comparison.candidate_for(query.against)
    delta = candidate.delta_for(query.run_scorer_id) or next(
        iter(candidate.deltas), None
    )
    items: list[dict[str, Any]] = []
    count = 0
    next_after: int | None = None
    if delta is not None:
        page = selectors.compare_rows(
            comparison=comparison,
            candidate=candidate,
            delta=delta,
            only=query.only,
            per_page=query.limit,
            offset=query.offset,
            after=query.after,
        )
        compare_rows_mask(page.rows, user=request.user, project_id=run_a.project_id)
        # Counted: the API compares with every figure counted (no count_max).
        count = page.count or 0
        next_after = page.next_after
        items = [
            {
                "item_id": row.a_item_id,
                "item_index": row.item_index,
                "b_item_id": row.b_item_id,
                "b_item_index": row.b_item.index if row.b_item else None,
                "a_result_id": row.a_result_id,
                "b_result_id": row.b_result_id,
                "a_status": row.a_status,
                "b_status": row.b_status,
                "a_score": row.a_score,
                "b_score": row.b_score,
                "delta": row.delta,
                "a_passed": row.a_passed,
                "b_passed": row.b_passed,
                "regression": row.regression,
                "pass_flip": row.pass_flip,
            }
            for row in page
        ]
    unmatched = None
    if query.unmatched:
        side = selectors.compare_unmatched(
            comparison=comparison,
            candidate=candidate,
            side=query.unmatched,
            delta=delta,
            per_page=query.limit,
            offset=query.offset,
        )
        unmatched = {
            "side": query.unmatched,
            "run_id": (run_a.pk if query.unmatched == "removed" else candidate.run.pk),
            "count": side.count,
            "items": [
                {
                    "item_id": row.item.pk,
                    "item_index": row.item.index,
                    "input": row.item.input,
                    "output": row.item.output,
                    "result_id": row.result_id,
                }
                for row in side
            ],
        }
    candidates = [
        {
            "run_id": c.run.pk,
            "label": c.label,
            "match": {
                "same_dataset": c.match.same_dataset,
                "items_a": c.match.items_a,
                "items_b": c.match.items_b,
                "matched": c.match.matched,
                "only_in_a": c.match.only_in_a,
                "only_in_b": c.match.only_in_b,
                "no_key_a": c.match.no_key_a,
                "no_key_b": c.match.no_key_b,
            },
            "pairs": [_pair(d) for d in c.deltas],
        }
        for c in comparison.candidates
    ]
    return {
        "run_a": run_a.pk,
        "run_b": runs[1].pk,
        "runs": [r.pk for r in runs],
        "match_mode": spec.mode,
        "match_key": spec.key if spec.mode == "key" else None,
        "tests": STATS_METHODS,
        "candidates": candidates,
        "pairs": candidates[0]["pairs"],
        "against": candidate.run.pk,
        "run_scorer_id": delta.a.pk if delta else None,
        "count": count,
        "items": items,
        "next_after": next_after,
        "unmatched": unmatched,
    }
