from __future__ import annotations

from datetime import date, datetime
from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from evalsite.accounts.models import (
    AuditEvent,
    Invitation,
    InvitationStatus,
    Membership,
    Project,
    Role,
)
from evalsite.accounts.selectors import AuditFilters
from evalsite.accounts.services import INVITATION_DAYS_DEFAULT, INVITATION_DAYS_MAX
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.lib.text import unstorable_char


class ProjectIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str = ""


class ProjectOut(Schema):
    id: int
    name: str
    description: str
    blind_review: bool
    reviewers_can_start_runs: bool
    reviewers_can_save_rescore: bool
    created_at: datetime
    role: str | None = None

    @staticmethod
    def resolve_role(project: Project, context: dict[str, Any]) -> str | None:
        """The caller's role: annotated by the list, attached by project_get_for_user,
        else looked up."""
        role = getattr(project, "caller_role", None)
        if role is not None:
            return str(role)
        membership = getattr(project, "membership", None)
        if membership is not None:
            return str(membership.role)
        user = context["request"].user
        return (
            Membership.objects.filter(project=project, user=user)
            .values_list("role", flat=True)
            .first()
        )


class MemberIn(Schema):
    model_config = ConfigDict(extra="forbid")
    username: str
    role: str


class MemberOut(Schema):
    id: int
    username: str
    role: str

    @staticmethod
    def resolve_username(membership: Membership) -> str:
        return membership.user.get_username()


class MemberInvitedOut(Schema):
    """The answer to adding a non-member, the same whether or not the name exists."""

    detail: str


class MemberRoleIn(Schema):
    model_config = ConfigDict(extra="forbid")
    role: Role


class InvitationIn(Schema):
    model_config = ConfigDict(extra="forbid")
    role: Role
    email: str = Field("", max_length=254)
    days: int = Field(INVITATION_DAYS_DEFAULT, ge=1, le=INVITATION_DAYS_MAX)


class InvitationOut(Schema):
    id: int
    role: str
    email: str
    status: InvitationStatus
    created_by: str | None
    created_at: datetime
    expires_at: datetime
    accepted_by: str | None
    accepted_at: datetime | None
    revoked_at: datetime | None
    invitee: str | None = Field(
        default=None,
        description="The account invited by username (only it can accept), if any.",
    )

    @staticmethod
    def resolve_status(obj: Invitation) -> str:
        return obj.status()

    @staticmethod
    def resolve_invitee(obj: Invitation) -> str | None:
        return obj.invitee.get_username() if obj.invitee else None

    @staticmethod
    def resolve_created_by(obj: Invitation) -> str | None:
        return obj.created_by.get_username() if obj.created_by else None

    @staticmethod
    def resolve_accepted_by(obj: Invitation) -> str | None:
        return obj.accepted_by.get_username() if obj.accepted_by else None


class InvitationCreatedOut(Schema):
    """A new invitation with its link: the only time the token is shown."""

    invitation: InvitationOut
    token: str
    url: str


class MembershipEventOut(Schema):
    id: int
    action: str
    actor: str | None
    subject: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    created_at: datetime

    @staticmethod
    def resolve_actor(obj: AuditEvent) -> str | None:
        return obj.actor.get_username() if obj.actor else None

    @staticmethod
    def resolve_subject(obj: AuditEvent) -> str | None:
        return obj.subject.get_username() if obj.subject else None


class AuditQuery(Schema):
    """The audit log's filters (GET /api/projects/{id}/audit and its CSV export)."""

    action: str = Field("", max_length=40, description="Exactly this action.")
    actor: str = Field("", max_length=150, description="Done by this username.")
    object_type: str = Field(
        "", max_length=40, description="About this kind of object (run, judge, …)."
    )
    since: date | None = Field(None, description="On or after this day.")
    until: date | None = Field(None, description="On or before this day.")

    @field_validator("action", "actor", "object_type")
    @classmethod
    def _storable(cls, value: str) -> str:
        # The database cannot compare text holding a NUL: refuse it as bad input
        # rather than let the query fail.
        found = unstorable_char(value)
        if found:
            raise ValueError(f"contains {found}")
        return value

    def filters(self) -> AuditFilters:
        return AuditFilters(
            action=self.action,
            actor=self.actor,
            object_type=self.object_type,
            since=self.since,
            until=self.until,
        )


class AuditListQuery(AuditQuery, LimitOffsetPagination.Input):
    """The filters and the page (limit/offset, as on every list)."""


class AuditEventOut(Schema):
    id: int
    created_at: datetime
    actor: str | None
    action: str
    object_type: str
    object_id: int | None
    object_label: str
    run_id: int | None
    result_id: int | None
    subject: str | None
    summary: str
    before: Any
    after: Any

    @staticmethod
    def resolve_actor(obj: AuditEvent) -> str | None:
        return obj.actor.get_username() if obj.actor else None

    @staticmethod
    def resolve_subject(obj: AuditEvent) -> str | None:
        return obj.subject.get_username() if obj.subject else None


class AuditPageOut(Schema):
    count: int
    items: list[AuditEventOut]
