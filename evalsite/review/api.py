"""Review API: one result in full, overrides and undo, what-if rescore, run comparison.

The results list, comments and queues are in api_queue.py (helper D2).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from ninja import Query, Router, Status

from evalsite.accounts.selectors import require_rescore_save
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, RunScorer
from evalsite.review import selectors, services
from evalsite.review.api_queue import router as queue_router
from evalsite.review.models import Override
from evalsite.review.schemas import (
    AggregateOut,
    CompareOut,
    CompareQueryIn,
    OverrideCreatedOut,
    OverrideIn,
    OverrideRevertedOut,
    OverrideRevertIn,
    RescoreIn,
    RescoreOut,
    ResultOut,
)

router = Router(tags=["review"])
router.add_router("", queue_router)


def _override_out(o: Override) -> dict[str, Any]:
    return {
        "id": o.pk,
        "result_id": o.result_id,
        "kind": o.kind,
        "path": o.path,
        "old_value": o.old_value,
        "new_value": o.new_value,
        "note": o.note,
        "user": o.user.get_username() if o.user else None,
        "created_at": o.created_at,
        "active": o.reverted_at is None,
        "reverted_at": o.reverted_at,
        "reverted_by": o.reverted_by.get_username() if o.reverted_by else None,
    }


def _final_out(r: Result) -> dict[str, Any]:
    return {
        "id": r.pk,
        "version": r.version,
        "status": r.status,
        "final_analysis": r.final_analysis,
        "final_score": r.final_score,
        "final_passed": r.final_passed,
        "score_overridden": r.score_overridden,
        "pass_overridden": r.pass_overridden,
        "overridden": r.overridden,
        "reviewed": r.reviewed,
        "human_passed": r.human_passed,
    }


def _aggregates(r: Result) -> list[dict[str, Any]]:
    return [
        a.as_dict()
        for a in selectors.run_aggregates(
            run_id=r.run_id, run_scorer_id=r.run_scorer_id
        )
    ]


@router.get("/results/{result_id}", response=ResultOut)
def result_detail(request: HttpRequest, result_id: int) -> dict[str, Any]:
    r = selectors.result_get_for_user(user=request.user, pk=result_id)
    item = r.item
    overrides = r.overrides.select_related("user", "reverted_by").order_by(
        "created_at", "id"
    )
    return _final_out(r) | {
        "run_id": r.run_id,
        "item": {
            "id": item.pk,
            "index": item.index,
            "input": item.input,
            "output": item.output,
            "context": item.context or [],
            "reference": item.reference or None,
            "metadata": item.metadata or {},
        },
        "scorer_id": r.run_scorer_id,
        "scorer_config_id": r.run_scorer.scorer_id,
        "scorer_name": r.run_scorer.name,
        "kind": r.run_scorer.kind,
        "error": r.error,
        "analysis": r.analysis,
        "judge_score": r.judge_score,
        "judge_passed": r.judge_passed,
        "reason": r.reason,
        "reviewed_by": r.reviewed_by.get_username() if r.reviewed_by else None,
        "reviewed_at": r.reviewed_at,
        "overrides": [_override_out(o) for o in overrides],
        "calls": list(r.calls.all()),
    }


@router.post("/results/{result_id}/overrides", response={201: OverrideCreatedOut})
def override_create(
    request: HttpRequest, result_id: int, payload: OverrideIn
) -> Status:
    r = selectors.result_get_for_user(user=request.user, pk=result_id, write=True)
    override = services.override_create(
        result=r,
        user=request.user,  # type: ignore[arg-type]
        kind=payload.kind,
        path=payload.path,
        value=payload.value,
        note=payload.note,
        expected_version=payload.expected_version,
    )
    return Status(
        201,
        {
            "override": _override_out(override),
            "result": _final_out(r),
            "aggregates": _aggregates(r),
        },
    )


@router.delete("/overrides/{override_id}", response=OverrideRevertedOut)
def override_revert(
    request: HttpRequest, override_id: int, payload: OverrideRevertIn | None = None
) -> dict[str, Any]:
    override = Override.objects.filter(pk=override_id).first()
    if override is None:
        raise Http404("No such override.")
    r = selectors.result_get_for_user(
        user=request.user, pk=override.result_id, write=True
    )
    override.result = r
    services.override_revert(
        override=override,
        user=request.user,  # type: ignore[arg-type]
        expected_version=payload.expected_version if payload else None,
    )
    override.refresh_from_db()
    return {
        "override": _override_out(override),
        "result": _final_out(r),
        "aggregates": _aggregates(r),
    }


@router.get("/runs/{run_id}/aggregates", response=list[AggregateOut])
def run_aggregates(request: HttpRequest, run_id: int) -> list[dict[str, Any]]:
    run = selectors.run_get_for_user(user=request.user, pk=run_id)
    return [a.as_dict() for a in selectors.run_aggregates(run_id=run.pk)]


def _run_scorer_for(run_id: int, payload: RescoreIn) -> RunScorer:
    scorers = RunScorer.objects.filter(run_id=run_id)
    if payload.run_scorer_id is not None:
        rs = scorers.filter(pk=payload.run_scorer_id).first()
        field = "run_scorer_id"
    else:
        # A run scorer id first; else the ScorerConfig the run used.
        rs = (
            scorers.filter(pk=payload.scorer_id).first()
            or scorers.filter(scorer_id=payload.scorer_id).first()
        )
        field = "scorer_id"
    if rs is None:
        raise ApplicationError(
            "That scorer is not part of this run.",
            field_errors={field: "not a scorer of this run"},
        )
    return rs


@router.post("/runs/{run_id}/rescore", response=RescoreOut)
def run_rescore(
    request: HttpRequest, run_id: int, payload: RescoreIn
) -> dict[str, Any]:
    # Even a preview is a POST: reviewers and owners only, like the UI. Saving
    # rewrites everyone's final scores: owners, or reviewers the owner allowed.
    run = selectors.run_get_for_user(user=request.user, pk=run_id, write=True)
    if payload.save:
        require_rescore_save(membership=run.project.membership)  # type: ignore[attr-defined]
    preview = services.run_rescore(
        run=run,
        run_scorer=_run_scorer_for(run.pk, payload),
        options=payload.options,
        user=request.user,  # type: ignore[arg-type]
        save=payload.save,
    )
    return preview.as_dict()


@router.get("/runs/{run_id}/compare/{other_id}", response=CompareOut)
def runs_compare(
    request: HttpRequest, run_id: int, other_id: int, query: Query[CompareQueryIn]
) -> dict[str, Any]:
    run_a = selectors.run_get_for_user(user=request.user, pk=run_id)
    run_b = selectors.run_get_for_user(user=request.user, pk=other_id)
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
                **{
                    k: getattr(p, k)
                    for k in (
                        "n",
                        "both_ok",
                        "regressions",
                        "improvements",
                        "unchanged",
                        "pass_to_fail",
                        "fail_to_pass",
                        "missing",
                        "a_mean",
                        "b_mean",
                        "mean_delta",
                        "a_pass_rate",
                        "b_pass_rate",
                    )
                },
            }
            for p in comparison.pairs
        ],
        "scorer_id": pair.a.pk if pair else None,
        "count": count,
        "items": items,
    }
