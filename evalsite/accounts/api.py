from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from ninja import Router
from ninja.pagination import paginate

from evalsite.accounts import services
from evalsite.accounts.models import Membership, Project
from evalsite.accounts.schemas import MemberIn, MemberOut, ProjectIn, ProjectOut
from evalsite.accounts.selectors import (
    project_get_for_user,
    project_list_for_user,
    require_project_create,
)
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.lib.text import text_check_storable

router = Router(tags=["projects"])


def _project_out(project: Project, role: str | None) -> dict[str, Any]:
    return {
        "id": project.pk,
        "name": project.name,
        "description": project.description,
        "blind_review": project.blind_review,
        "reviewers_can_start_runs": project.reviewers_can_start_runs,
        "reviewers_can_save_rescore": project.reviewers_can_save_rescore,
        "created_at": project.created_at,
        "role": role,
    }


@router.get("/projects", response=list[ProjectOut])
@paginate(LimitOffsetPagination)
def project_list(request: AuthenticatedHttpRequest) -> list[dict[str, Any]]:
    roles = dict(
        Membership.objects.filter(user=request.user).values_list("project_id", "role")
    )
    return [
        _project_out(p, roles.get(p.pk))
        for p in project_list_for_user(user=request.user)
    ]


@router.post("/projects", response={201: ProjectOut})
def project_create(
    request: AuthenticatedHttpRequest, payload: ProjectIn
) -> dict[str, Any]:
    require_project_create(user=request.user)
    project = services.project_create(
        user=request.user, name=payload.name, description=payload.description
    )
    return _project_out(project, "owner")


@router.get("/projects/{project_id}", response=ProjectOut)
def project_detail(
    request: AuthenticatedHttpRequest, project_id: int
) -> dict[str, Any]:
    project = project_get_for_user(user=request.user, pk=project_id)
    return _project_out(project, project.membership.role)


@router.get("/projects/{project_id}/members", response=list[MemberOut])
@paginate(LimitOffsetPagination)
def member_list(
    request: AuthenticatedHttpRequest, project_id: int
) -> list[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id)
    return [
        {"id": m.pk, "username": m.user.get_username(), "role": m.role}
        for m in project.memberships.select_related("user").order_by("user__username")
    ]


@router.post("/projects/{project_id}/members", response={200: MemberOut})
def member_set(
    request: AuthenticatedHttpRequest, project_id: int, payload: MemberIn
) -> dict[str, Any]:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    text_check_storable(payload.username, field="username")
    user = get_user_model().objects.filter(username=payload.username).first()
    if user is None:
        raise ApplicationError(
            "No such user.", field_errors={"username": "No such user."}
        )
    membership = services.membership_set(project=project, user=user, role=payload.role)
    return {
        "id": membership.pk,
        "username": user.get_username(),
        "role": membership.role,
    }
