"""REST endpoints for scorers (DESIGN.md paths)."""

from __future__ import annotations

from typing import Any

from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals.models import JudgeConnection, ScorerConfig
from evalsite.evals.scorers import selectors, services
from evalsite.evals.scorers.schemas import ScorerIn, ScorerOut, ScorerPatch
from evalsite.evals.scorers.services import UNSET

router = Router(tags=["judges, scorers, runs"])


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
    request: AuthenticatedHttpRequest,
    project_id: int,
    include_archived: bool = False,
    archived: bool = False,
) -> list[ScorerConfig]:
    """The project's current scorers; `archived=true` lists the archived ones (not
    the old versions an edit replaced), `include_archived=true` every version."""
    project = project_get_for_user(user=request.user, pk=project_id)
    return list(
        selectors.scorer_list(
            project_id=project.pk,
            archived=archived,
            include_archived=include_archived,
        )
    )


@router.post("/projects/{project_id}/scorers", response={201: ScorerOut})
def scorer_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: ScorerIn
) -> Status[ScorerConfig]:
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
    return Status(201, scorer)


@router.get("/scorers/{scorer_id}", response=ScorerOut)
def scorer_detail(request: AuthenticatedHttpRequest, scorer_id: int) -> ScorerConfig:
    return selectors.scorer_get_for_user(user=request.user, pk=scorer_id)


@router.patch("/scorers/{scorer_id}", response=ScorerOut)
def scorer_update(
    request: AuthenticatedHttpRequest, scorer_id: int, payload: ScorerPatch
) -> ScorerConfig:
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
    return saved
