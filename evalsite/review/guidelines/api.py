"""Review API: a project's and a queue's guidelines (read by members, written by
owners and adjudicators; each PUT adds a version)."""

from __future__ import annotations

from ninja import Router

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.schemas import ErrorOut
from evalsite.review.guidelines.schemas import GuidelineIn, GuidelineOut, GuidelinesOut
from evalsite.review.guidelines.selectors import (
    GuidelineScope,
    guideline_scope_for_user,
)
from evalsite.review.guidelines.services import guideline_save
from evalsite.review.models import Guideline

router = Router(tags=["review"])

_READ_ERRORS = {401: ErrorOut, 404: ErrorOut}
_WRITE_ERRORS = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    422: ErrorOut,
}


@router.get(
    "/projects/{project_id}/guidelines",
    response={200: GuidelinesOut, **_READ_ERRORS},
)
def project_guidelines_api(
    request: AuthenticatedHttpRequest, project_id: int
) -> GuidelineScope:
    return guideline_scope_for_user(user=request.user, project_id=project_id)


@router.put(
    "/projects/{project_id}/guidelines",
    response={200: GuidelineOut, **_WRITE_ERRORS},
)
def project_guidelines_put_api(
    request: AuthenticatedHttpRequest, project_id: int, payload: GuidelineIn
) -> Guideline:
    scope = guideline_scope_for_user(
        user=request.user, project_id=project_id, edit=True
    )
    saved = guideline_save(
        project=scope.project,
        body=payload.body,
        user=request.user,
        expected_version=payload.expected_version,
    )
    return saved


@router.get(
    "/projects/{project_id}/queues/{queue_id}/guidelines",
    response={200: GuidelinesOut, **_READ_ERRORS},
)
def queue_guidelines_api(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int
) -> GuidelineScope:
    return guideline_scope_for_user(
        user=request.user, project_id=project_id, queue_id=queue_id
    )


@router.put(
    "/projects/{project_id}/queues/{queue_id}/guidelines",
    response={200: GuidelineOut, **_WRITE_ERRORS},
)
def queue_guidelines_put_api(
    request: AuthenticatedHttpRequest,
    project_id: int,
    queue_id: int,
    payload: GuidelineIn,
) -> Guideline:
    scope = guideline_scope_for_user(
        user=request.user, project_id=project_id, queue_id=queue_id, edit=True
    )
    saved = guideline_save(
        project=scope.project,
        queue=scope.queue,
        body=payload.body,
        user=request.user,
        expected_version=payload.expected_version,
    )
    return saved
