"""REST endpoints for judge connections (DESIGN.md paths)."""

from __future__ import annotations

from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals.judges import selectors, services
from evalsite.evals.judges.schemas import JudgeIn, JudgeOut, JudgePatch, JudgeTestOut
from evalsite.evals.models import JudgeConnection

router = Router(tags=["judges, scorers, runs"])


def _rpm(payload: JudgeIn | JudgePatch) -> int | None:
    return payload.rpm if payload.rpm is not None else payload.requests_per_minute


@router.get("/projects/{project_id}/judges", response=list[JudgeOut])
@paginate(LimitOffsetPagination)
def judge_list(
    request: AuthenticatedHttpRequest, project_id: int, archived: bool = False
) -> list[JudgeConnection]:
    """The project's judge connections; `archived=true` lists the archived ones."""
    project = project_get_for_user(user=request.user, pk=project_id)
    return list(selectors.judge_list(project_id=project.pk, archived=archived))


@router.post("/projects/{project_id}/judges", response={201: JudgeOut})
def judge_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: JudgeIn
) -> Status[JudgeConnection]:
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
    return Status(201, judge)


@router.get("/judges/{judge_id}", response=JudgeOut)
def judge_detail(request: AuthenticatedHttpRequest, judge_id: int) -> JudgeConnection:
    return selectors.judge_get_for_user(user=request.user, pk=judge_id)


@router.patch("/judges/{judge_id}", response=JudgeOut)
def judge_update(
    request: AuthenticatedHttpRequest, judge_id: int, payload: JudgePatch
) -> JudgeConnection:
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
    return judge


@router.post("/judges/{judge_id}/test", response=JudgeTestOut)
def judge_test(
    request: AuthenticatedHttpRequest, judge_id: int
) -> services.JudgeTestResult:
    judge = selectors.judge_get_for_user(user=request.user, pk=judge_id, manage=True)
    return services.judge_test(judge=judge, user=request.user)
