"""REST endpoints for judges, scorers and runs (DESIGN.md paths)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.http import Http404
from django.urls import reverse
from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user, require_run_start
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals import selectors, services
from evalsite.evals.models import JudgeConnection, Run, ScorerConfig
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.schemas import (
    JudgeIn,
    JudgeOut,
    JudgePatch,
    JudgeTestOut,
    RetryOut,
    RunDetailOut,
    RunIn,
    RunOut,
    RunStartedOut,
    ScorerIn,
    ScorerOut,
    ScorerPatch,
)
from evalsite.evals.services.scorers import UNSET

router = Router(tags=["judges, scorers, runs"])


def _judge_out(judge: JudgeConnection) -> dict[str, Any]:
    # Built field by field: the key (and where it comes from) never leaves the server.
    return {
        "id": judge.pk,
        "project_id": judge.project_id,
        "name": judge.name,
        "base_url": judge.base_url,
        "model": judge.model,
        "temperature": judge.temperature,
        "timeout_seconds": judge.timeout_seconds,
        "max_concurrency": judge.max_concurrency,
        "rpm": judge.requests_per_minute,
        "requests_per_minute": judge.requests_per_minute,
        "price_per_1k_input": judge.price_per_1k_input,
        "price_per_1k_output": judge.price_per_1k_output,
        "is_offline": judge.is_offline,
        "label": "offline heuristic judge" if judge.is_offline else "LLM judge",
        "has_api_key": judge.has_api_key,
        "created_at": judge.created_at,
    }


def _rpm(payload: JudgeIn | JudgePatch) -> int | None:
    return payload.rpm if payload.rpm is not None else payload.requests_per_minute


@router.get("/projects/{project_id}/judges", response=list[JudgeOut])
@paginate(LimitOffsetPagination)
def judge_list(
    request: AuthenticatedHttpRequest, project_id: int
) -> list[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id)
    return [_judge_out(j) for j in selectors.judge_list(project_id=project.pk)]


@router.post("/projects/{project_id}/judges", response={201: JudgeOut})
def judge_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: JudgeIn
) -> Status[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    data = payload.model_dump(exclude={"rpm", "requests_per_minute", "api_key"})
    rpm = _rpm(payload)
    if rpm is not None:
        data["requests_per_minute"] = rpm
    judge = services.judge_create(
        project=project,
        user=request.user,
        api_key=payload.api_key.get_secret_value() if payload.api_key else None,
        **data,
    )
    return Status(201, _judge_out(judge))


@router.get("/judges/{judge_id}", response=JudgeOut)
def judge_detail(request: AuthenticatedHttpRequest, judge_id: int) -> dict[str, Any]:
    return _judge_out(selectors.judge_get_for_user(user=request.user, pk=judge_id))


@router.patch("/judges/{judge_id}", response=JudgeOut)
def judge_update(
    request: AuthenticatedHttpRequest, judge_id: int, payload: JudgePatch
) -> dict[str, Any]:
    judge = selectors.judge_get_for_user(user=request.user, pk=judge_id, manage=True)
    changes = payload.model_dump(
        exclude_unset=True,
        exclude={
            "rpm",
            "requests_per_minute",
            "api_key",
            "api_key_env",
            "clear_api_key",
        },
    )
    if _rpm(payload) is not None:
        changes["requests_per_minute"] = _rpm(payload)
    judge = services.judge_update(
        judge=judge,
        user=request.user,
        api_key=payload.api_key.get_secret_value() if payload.api_key else None,
        api_key_env=payload.api_key_env,
        clear_api_key=payload.clear_api_key,
        **changes,
    )
    return _judge_out(judge)


@router.post("/judges/{judge_id}/test", response=JudgeTestOut)
def judge_test(request: AuthenticatedHttpRequest, judge_id: int) -> dict[str, Any]:
    judge = selectors.judge_get_for_user(user=request.user, pk=judge_id, manage=True)
    return dataclasses.asdict(services.judge_test(judge=judge, user=request.user))


# --------------------------------------------------------------------------- scorers


def _scorer_out(scorer: ScorerConfig) -> dict[str, Any]:
    return {
        "id": scorer.pk,
        "project_id": scorer.project_id,
        "name": scorer.name,
        "kind": scorer.kind,
        "judge_id": scorer.judge_id,
        "options": scorer.options,
        "threshold": (scorer.options or {}).get("threshold"),
        "version": scorer.version,
        "parent_id": scorer.parent_id,
        "archived": scorer.archived,
        "created_at": scorer.created_at,
    }


def _judge_in_project(project_id: int, judge_id: int | None) -> JudgeConnection | None:
    if judge_id is None:
        return None
    judge = JudgeConnection.objects.filter(pk=judge_id, project_id=project_id).first()
    if judge is None:
        raise ApplicationError(
            "No such judge connection in this project.",
            field_errors={"judge_id": "Not a judge connection of this project."},
        )
    return judge


@router.get("/projects/{project_id}/scorers", response=list[ScorerOut])
@paginate(LimitOffsetPagination)
def scorer_list(
    request: AuthenticatedHttpRequest, project_id: int, include_archived: bool = False
) -> list[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id)
    return [
        _scorer_out(s)
        for s in selectors.scorer_list(
            project_id=project.pk, include_archived=include_archived
        )
    ]


@router.post("/projects/{project_id}/scorers", response={201: ScorerOut})
def scorer_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: ScorerIn
) -> Status[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    scorer = services.scorer_create(
        project=project,
        user=request.user,
        name=payload.name,
        kind=payload.kind,
        judge=_judge_in_project(project.pk, payload.judge_id),
        options=payload.options,
        # None means "not given": factuality's null threshold is also its default.
        threshold=payload.threshold if payload.threshold is not None else UNSET,
    )
    return Status(201, _scorer_out(scorer))


@router.get("/scorers/{scorer_id}", response=ScorerOut)
def scorer_detail(request: AuthenticatedHttpRequest, scorer_id: int) -> dict[str, Any]:
    return _scorer_out(selectors.scorer_get_for_user(user=request.user, pk=scorer_id))


@router.patch("/scorers/{scorer_id}", response=ScorerOut)
def scorer_update(
    request: AuthenticatedHttpRequest, scorer_id: int, payload: ScorerPatch
) -> dict[str, Any]:
    scorer = selectors.scorer_get_for_user(user=request.user, pk=scorer_id, write=True)
    fields = payload.model_dump(exclude_unset=True)
    kwargs: dict[str, Any] = {}
    if "judge_id" in fields:
        kwargs["judge"] = _judge_in_project(scorer.project_id, fields["judge_id"])
    if fields.get("threshold") is not None:
        kwargs["threshold"] = fields["threshold"]
    saved = services.scorer_update(
        scorer=scorer,
        user=request.user,
        name=fields.get("name"),
        options=fields.get("options"),
        **kwargs,
    )
    return _scorer_out(saved)


# --------------------------------------------------------------------------- runs


def _run_out(run: Run, progress: Any = None) -> dict[str, Any]:
    progress = progress or selectors.run_progress(run=run)
    return {
        "id": run.pk,
        "project_id": run.project_id,
        "dataset_id": run.dataset_id,
        "name": str(run),
        "status": run.status,
        "error": run.error,
        "total": run.total,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "progress": progress.as_dict(),
    }


def _aggregates(run: Run) -> list[dict[str, Any]]:
    return [agg.as_dict() for agg in run_aggregates(run_id=run.pk)]


@router.get("/projects/{project_id}/runs", response=list[RunOut])
@paginate(LimitOffsetPagination)
def run_list(
    request: AuthenticatedHttpRequest, project_id: int
) -> list[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id)
    runs = list(selectors.run_list(project_id=project.pk)[:1000])
    progress = selectors.run_progress_many(runs=runs)
    return [_run_out(r, progress[r.pk]) for r in runs]


@router.post("/projects/{project_id}/runs", response={202: RunStartedOut})
def run_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: RunIn
) -> Status[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    try:
        dataset = selectors.dataset_get_in_project(
            project_id=project.pk, pk=payload.dataset_id
        )
        scorers = selectors.scorers_in_project(
            project_id=project.pk, ids=payload.scorer_ids
        )
    except Http404 as exc:
        field = "dataset_id" if "dataset" in str(exc) else "scorer_ids"
        raise ApplicationError(str(exc), field_errors={field: str(exc)}) from exc
    require_run_start(
        membership=project.membership,
        judges=[s.judge for s in scorers],
    )
    run = services.run_start(
        project=project,
        user=request.user,
        dataset=dataset,
        scorers=scorers,
        name=payload.name,
    )
    return Status(
        202,
        {
            "id": run.pk,
            "status": run.status,
            "total": run.total,
            "url": reverse("api:run_detail", kwargs={"run_id": run.pk}),
        },
    )


@router.get("/runs/{run_id}", response=RunDetailOut, url_name="run_detail")
def run_detail(request: AuthenticatedHttpRequest, run_id: int) -> dict[str, Any]:
    run = selectors.run_get_for_user(user=request.user, pk=run_id)
    return _run_out(run) | {
        "scorers": [
            {
                "id": rs.pk,
                "scorer_id": rs.scorer_id,
                "name": rs.name,
                "kind": rs.kind,
                "options": rs.options,
                "judge": rs.judge_snapshot,
            }
            for rs in run.run_scorers.all()
        ],
        "aggregates": _aggregates(run),
        "errors_by_message": [
            dataclasses.asdict(g) for g in selectors.run_error_groups(run=run)
        ],
    }


@router.post("/runs/{run_id}/cancel", response=RunOut)
def run_cancel(request: AuthenticatedHttpRequest, run_id: int) -> dict[str, Any]:
    run = selectors.run_get_for_user(user=request.user, pk=run_id, write=True)
    return _run_out(services.run_cancel(run=run, user=request.user))


@router.post("/runs/{run_id}/retry-failed", response=RetryOut)
def run_retry_failed(request: AuthenticatedHttpRequest, run_id: int) -> dict[str, Any]:
    run = selectors.run_get_for_user(user=request.user, pk=run_id, write=True)
    # A retry calls the run's judges again: the same rule as starting the run.
    require_run_start(
        membership=run.project.membership,
        judges=[rs.judge for rs in run.run_scorers.select_related("judge")],
    )
    count = services.run_retry_failed(run=run, user=request.user)
    run.refresh_from_db()
    return {"id": run.pk, "status": run.status, "retried": count}
