"""Review API: one result in full, its overrides, and undo."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from evalsite.evals.models import Result
from evalsite.review import selectors, services
from evalsite.review.models import Override
from evalsite.review.schemas import (
    OverrideCreatedOut,
    OverrideIn,
    OverrideRevertedOut,
    OverrideRevertIn,
    ResultOut,
)

router = Router(tags=["review"])


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
    override = selectors.override_get_for_user(
        user=request.user, pk=override_id, write=True
    )
    r = override.result
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
