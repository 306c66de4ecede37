from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse
from ninja import Query, Router, Status
from ninja.pagination import paginate

from evalsite.accounts import services
from evalsite.accounts.models import (
    Invitation,
    InvitationStatus,
    Membership,
    Project,
)
from evalsite.accounts.schemas import (
    AuditListQuery,
    AuditPageOut,
    InvitationCreatedOut,
    InvitationIn,
    InvitationOut,
    MemberIn,
    MemberInvitedOut,
    MemberOut,
    MemberRoleIn,
    MembershipEventOut,
    ProjectIn,
    ProjectOut,
)
from evalsite.accounts.selectors import (
    AuditEventsReadable,
    audit_event_list_for,
    invitation_get_for_user,
    invitation_list,
    invitation_list_for_invitee,
    membership_event_list_for,
    membership_get_for_user,
    membership_list,
    project_get_for_user,
    project_list_for_user,
    require_project_create,
)
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.core.schemas import ErrorOut
from evalsite.lib.text import text_check_storable

router = Router(tags=["projects"])

_READ_ERRORS = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}
_WRITE_ERRORS = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    422: ErrorOut,
}


@router.get("/projects", response=list[ProjectOut])
@paginate(LimitOffsetPagination)
def project_list(request: AuthenticatedHttpRequest) -> QuerySet[Project]:
    # The caller's role in one query with the page (ProjectOut reads caller_role).
    role = Membership.objects.filter(project=OuterRef("pk"), user=request.user)
    return project_list_for_user(user=request.user).annotate(
        caller_role=Subquery(role.values("role")[:1])
    )


@router.post("/projects", response={201: ProjectOut})
def project_create(request: AuthenticatedHttpRequest, payload: ProjectIn) -> Project:
    require_project_create(user=request.user)
    project = services.project_create(
        user=request.user, name=payload.name, description=payload.description
    )
    project.caller_role = "owner"  # type: ignore[attr-defined]
    return project


@router.get("/projects/{project_id}", response=ProjectOut)
def project_detail(request: AuthenticatedHttpRequest, project_id: int) -> Project:
    return project_get_for_user(user=request.user, pk=project_id)


@router.get(
    "/projects/{project_id}/members",
    response={200: list[MemberOut], **_READ_ERRORS},
)
@paginate(LimitOffsetPagination)
def member_list(request: AuthenticatedHttpRequest, project_id: int) -> list[Membership]:
    project = project_get_for_user(user=request.user, pk=project_id)
    return list(membership_list(project=project))


@router.post(
    "/projects/{project_id}/members",
    response={200: MemberOut, 202: MemberInvitedOut, **_WRITE_ERRORS},
    summary="Change a member's role (200), or invite a user by username (202: they "
    "join when they accept; the same answer whether or not the name exists)",
)
def member_set(
    request: AuthenticatedHttpRequest, project_id: int, payload: MemberIn
) -> Status[Any]:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    text_check_storable(payload.username, field="username")
    membership = services.member_add(
        project=project,
        actor=request.user,
        username=payload.username,
        role=payload.role,
    )
    if membership is not None:
        return Status(200, membership)
    message = services.member_invite_message(
        username=payload.username, role=payload.role
    )
    return Status(202, {"detail": message})


@router.patch(
    "/projects/{project_id}/members/{membership_id}",
    response={200: MemberOut, **_WRITE_ERRORS},
    summary="Change a member's role (the last owner stays owner)",
)
def member_role(
    request: AuthenticatedHttpRequest,
    project_id: int,
    membership_id: int,
    payload: MemberRoleIn,
) -> Membership:
    membership = membership_get_for_user(
        user=request.user, project_id=project_id, pk=membership_id, manage=True
    )
    updated = services.membership_set(
        project=membership.project,
        user=membership.user,
        role=payload.role,
        actor=request.user,
    )
    return updated


@router.delete(
    "/projects/{project_id}/members/{membership_id}",
    response={204: None, **_WRITE_ERRORS},
    summary="Remove a member (never the last owner)",
)
def member_remove(
    request: AuthenticatedHttpRequest, project_id: int, membership_id: int
) -> Status[None]:
    membership = membership_get_for_user(
        user=request.user, project_id=project_id, pk=membership_id, manage=True
    )
    services.membership_remove(membership=membership, actor=request.user)
    return Status(204, None)


@router.get(
    "/projects/{project_id}/invitations",
    response={200: list[InvitationOut], **_READ_ERRORS},
    summary="The project's invitations, newest first (no tokens; owners only)",
)
@paginate(LimitOffsetPagination)
def invitation_list_endpoint(
    request: AuthenticatedHttpRequest,
    project_id: int,
    status: str | None = None,
) -> QuerySet[Invitation]:
    """`status` is a plain string checked here: ninja's @paginate wrapper breaks
    postponed annotations of anything but builtins (see review's result_list).
    Owners only: invitations name their invitees' emails."""
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    if status is not None and status not in InvitationStatus.values:
        raise ApplicationError(
            f"Unknown status {status!r}.",
            field_errors={"status": "One of " + ", ".join(InvitationStatus.values)},
        )
    return invitation_list(
        project=project, status=InvitationStatus(status) if status else None
    )


@router.post(
    "/projects/{project_id}/invitations",
    response={201: InvitationCreatedOut, **_WRITE_ERRORS},
    summary="Invite someone: returns the one-time link, shown only in this response",
)
def invitation_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: InvitationIn
) -> Status[dict[str, Any]]:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    invitation, raw = services.invitation_create(
        project=project,
        actor=request.user,
        role=payload.role,
        email=payload.email,
        days=payload.days,
    )
    url = request.build_absolute_uri(reverse("accounts:invite", args=[raw]))
    return Status(201, {"invitation": invitation, "token": raw, "url": url})


@router.post(
    "/projects/{project_id}/invitations/{invitation_id}/revoke",
    response={200: InvitationOut, **_WRITE_ERRORS},
    summary="Revoke an unused invitation: its link answers 410 from now on",
)
def invitation_revoke(
    request: AuthenticatedHttpRequest, project_id: int, invitation_id: int
) -> Invitation:
    invitation = invitation_get_for_user(
        user=request.user, project_id=project_id, pk=invitation_id, manage=True
    )
    return services.invitation_revoke(invitation=invitation, actor=request.user)


@router.get(
    "/invitations",
    response={200: list[InvitationOut], 401: ErrorOut, 422: ErrorOut},
    summary="Pending invitations to my own account (an owner invited me by username)",
)
@paginate(LimitOffsetPagination)
def invitation_list_mine(request: AuthenticatedHttpRequest) -> QuerySet[Invitation]:
    return invitation_list_for_invitee(user=request.user)


@router.post(
    "/invitations/{invitation_id}/accept",
    response={200: MemberOut, **_WRITE_ERRORS, 410: ErrorOut},
    summary="Accept an invitation to my account: I join its project with its role",
)
def invitation_accept_mine(
    request: AuthenticatedHttpRequest, invitation_id: int
) -> Membership:
    return services.invitation_accept_invited(
        invitation_id=invitation_id, user=request.user
    )


@router.post(
    "/invitations/{invitation_id}/decline",
    response={204: None, **_WRITE_ERRORS, 410: ErrorOut},
    summary="Decline an invitation to my account (it is revoked)",
)
def invitation_decline_mine(
    request: AuthenticatedHttpRequest, invitation_id: int
) -> Status[None]:
    services.invitation_decline(invitation_id=invitation_id, user=request.user)
    return Status(204, None)


@router.get(
    "/projects/{project_id}/membership-events",
    response={200: list[MembershipEventOut], **_READ_ERRORS},
    summary="The access log: every membership change, newest first (emails for owners only)",
)
@paginate(LimitOffsetPagination)
def membership_event_list_endpoint(
    request: AuthenticatedHttpRequest, project_id: int
) -> AuditEventsReadable:
    project = project_get_for_user(user=request.user, pk=project_id)
    return membership_event_list_for(project=project, membership=project.membership)


@router.get(
    "/projects/{project_id}/audit",
    response={200: AuditPageOut, **_READ_ERRORS},
    summary="The project's audit log, filtered, newest first (any member)",
)
def audit_event_list_endpoint(
    request: AuthenticatedHttpRequest,
    project_id: int,
    query: AuditListQuery = Query(...),  # type: ignore[type-arg]  # noqa: B008 - ninja types Query as an Annotated alias
) -> dict[str, Any]:
    """Paginated by hand: ninja's @paginate wrapper breaks postponed annotations of a
    Query schema."""
    project = project_get_for_user(user=request.user, pk=project_id)
    events = audit_event_list_for(
        project=project, user=request.user, filters=query.filters()
    )
    return {
        "count": len(events),
        "items": events[query.offset : query.offset + query.limit],
    }
