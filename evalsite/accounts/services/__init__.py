"""accounts' writes, by subdomain: projects, members (roles, new accounts,
invitations, the access log) and API tokens. Callers import them from here."""

from __future__ import annotations

from evalsite.accounts.services.members import (
    INVITATION_DAYS_DEFAULT,
    INVITATION_DAYS_MAX,
    INVITATION_GONE_MESSAGES,
    INVITATIONS_PENDING_MAX,
    PASSWORD_MAX_LENGTH,
    InvitationGoneError,
    invitation_accept,
    invitation_accept_invited,
    invitation_create,
    invitation_decline,
    invitation_revoke,
    invitation_signup,
    member_add,
    member_create,
    member_invite_message,
    membership_changes_record,
    membership_event_write,
    membership_remove,
    membership_set,
    membership_snapshot,
)
from evalsite.accounts.services.projects import (
    on_project_created,
    project_create,
    project_update,
)
from evalsite.accounts.services.tokens import (
    api_token_authenticate,
    api_token_create,
    api_token_revoke,
)

__all__ = [
    "INVITATIONS_PENDING_MAX",
    "INVITATION_DAYS_DEFAULT",
    "INVITATION_DAYS_MAX",
    "INVITATION_GONE_MESSAGES",
    "PASSWORD_MAX_LENGTH",
    "InvitationGoneError",
    "api_token_authenticate",
    "api_token_create",
    "api_token_revoke",
    "invitation_accept",
    "invitation_create",
    "invitation_accept_invited",
    "invitation_decline",
    "invitation_revoke",
    "invitation_signup",
    "member_add",
    "member_create",
    "member_invite_message",
    "membership_changes_record",
    "membership_event_write",
    "membership_remove",
    "membership_set",
    "membership_snapshot",
    "on_project_created",
    "project_create",
    "project_update",
]
