"""Review API: one result in full, its overrides, and undo."""

from __future__ import annotations

from typing import Any

from ninja import Router, Status

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import JudgeCall, Result
from evalsite.evals.results import verdicts
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.selectors import override_get_for_user
from evalsite.evals.runs.selectors import result_get_for_user
from evalsite.review.schemas import (
    OverrideCreatedOut,
    OverrideIn,
    OverrideRevertedOut,
    OverrideRevertIn,
    ResultOut,
)
from evalsite.review.selectors.blind import blind_entry_for, result_out_mask
from evalsite.review.team.services import review_override_revert

router = Router(tags=["review"])


def _final_out(result: Result) -> dict[str, Any]:
    return {
        "id": result.pk,
        "version": result.version,
        "status": result.status,
        "final_analysis": result.final_analysis,
        "final_score": result.final_score,
        "final_passed": result.final_passed,
        "score_overridden": result.score_overridden,
        "pass_overridden": result.pass_overridden,
        "overridden": result.overridden,
        "reviewed": result.reviewed,
        "human_passed": result.human_passed,
    }


def _aggregates(result: Result) -> list[dict[str, Any]]:
    return [
        a.as_dict()
        for a in run_aggregates(
            run_id=result.run_id, run_scorer_id=result.run_scorer_id
        )
    ]


def _calls_out(result: Result) -> list[JudgeCall]:
    """The result's judge calls; the judge's full reply to a failed call only for the
    project's owners (everyone else has the short reason in `error`)."""
    if result.project.membership.can_manage:
        return list(result.calls.all())
    calls = list(result.calls.defer("error_body"))
    for call in calls:
        call.error_body = ""  # in memory only: the response, never the row
    return calls


@router.get("/results/{result_id}", response=ResultOut)
def result_detail(request: AuthenticatedHttpRequest, result_id: int) -> dict[str, Any]:
    result = result_get_for_user(user=request.user, pk=result_id)
    item = result.item
    overrides = result.overrides.select_related("user", "reverted_by").order_by(
        "created_at", "id"
    )
    out = _final_out(result) | {
        "run_id": result.run_id,
        "item": {
            "id": item.pk,
            "index": item.index,
            "input": item.input,
            "output": item.output,
            "context": item.context or [],
            "reference": item.reference or None,
            "metadata": item.metadata or {},
            "system_prompt": item.system_prompt,
            "conversation": item.conversation,
            "tool_calls": item.tool_calls,
            "expected_tool_calls": item.expected_tool_calls,
            "expected_trajectory": item.expected_trajectory,
            "baseline_output": item.baseline_output,
        },
        "run_scorer_id": result.run_scorer_id,
        "scorer_config_id": result.run_scorer.scorer_id,
        "scorer_name": result.run_scorer.name,
        "kind": result.run_scorer.kind,
        "error": result.error,
        "analysis": result.analysis,
        "judge_score": result.judge_score,
        "judge_passed": result.judge_passed,
        "judge_version": result.judge_version,
        "judge_answers": result.judge_answers,
        "judge_uncertainty": result.judge_uncertainty,
        "reason": result.reason,
        "reviewed_by": result.reviewed_by.get_username()
        if result.reviewed_by
        else None,
        "reviewed_at": result.reviewed_at,
        "overrides": list(overrides),
        "calls": _calls_out(result),
    }
    blind = blind_entry_for(user=request.user, result=result)
    return out if blind is None else result_out_mask(out, blind)


@router.post("/results/{result_id}/overrides", response={201: OverrideCreatedOut})
def override_create(
    request: AuthenticatedHttpRequest, result_id: int, payload: OverrideIn
) -> Status[dict[str, Any]]:
    result = result_get_for_user(user=request.user, pk=result_id, write=True)
    override = verdicts.override_create(
        result=result,
        user=request.user,
        kind=payload.kind,
        path=payload.path,
        value=payload.value,
        note=payload.note,
        expected_version=payload.expected_version,
    )
    return Status(
        201,
        {
            "override": override,
            "result": result,
            "aggregates": _aggregates(result),
        },
    )


@router.delete("/overrides/{override_id}", response=OverrideRevertedOut)
def override_revert(
    request: AuthenticatedHttpRequest,
    override_id: int,
    payload: OverrideRevertIn | None = None,
) -> dict[str, Any]:
    override = override_get_for_user(user=request.user, pk=override_id, write=True)
    result = override.result
    review_override_revert(
        override=override,
        user=request.user,
        expected_version=payload.expected_version if payload else None,
    )
    override.refresh_from_db()
    return {
        "override": override,
        "result": result,
        "aggregates": _aggregates(result),
    }
