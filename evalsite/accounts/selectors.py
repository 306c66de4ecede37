from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol, overload

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from evalsite.accounts.models import (
    MEMBERSHIP_OBJECT,
    AuditEvent,
    Invitation,
    InvitationStatus,
    Membership,
    Project,
    Role,
    hash_token,
)


def project_list_for_user(*, user: User | AnonymousUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user).order_by("name", "id")


def membership_get(*, user: User | AnonymousUser, project_id: int) -> Membership:
    """The user's membership of a project, or Http404 so outsiders learn nothing."""
    if not user.is_authenticated:
        raise Http404("No such project.")
    try:
        # One membership per (project, user): a unique constraint.
        return Membership.objects.select_related("project").get(
            user=user, project_id=project_id
        )
    except Membership.DoesNotExist:
        raise Http404("No such project.") from None


def project_get_for_user(
    *,
    user: User | AnonymousUser,
    pk: int,
    write: bool = False,
    manage: bool = False,
) -> Project:
    """The project if `user` is a member; 404 for outsiders, 403 when the role is too low.

    write=True needs reviewer or owner; manage=True needs owner.
    """
    membership = membership_get(user=user, project_id=pk)
    require_role(membership, write=write, manage=manage)
    project = membership.project
    project.membership = membership
    return project


def membership_get_for_user(
    *,
    user: User | AnonymousUser,
    project_id: int,
    pk: int,
    manage: bool = False,
) -> Membership:
    """Membership `pk` of project `project_id` (anyone's, not only the caller's) if
    `user` is a member of that project; 404 for outsiders and for another project's
    membership, 403 when manage=True and the caller is not an owner."""
    project = project_get_for_user(user=user, pk=project_id, manage=manage)
    try:
        membership = Membership.objects.select_related("user").get(
            pk=pk, project=project
        )
    except Membership.DoesNotExist:
        raise Http404("No such member.") from None
    membership.project = project
    return membership


def membership_list(*, project: Project) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("user__username", "id")
    )


def invitation_get_for_user(
    *,
    user: User | AnonymousUser,
    project_id: int,
    pk: int,
    manage: bool = False,
) -> Invitation:
    """Invitation `pk` of project `project_id` if `user` is a member of it; 404 for
    outsiders and for another project's invitation, 403 when manage=True and the
    caller is not an owner."""
    project = project_get_for_user(user=user, pk=project_id, manage=manage)
    try:
        invitation = Invitation.objects.select_related("created_by", "accepted_by").get(
            pk=pk, project=project
        )
    except Invitation.DoesNotExist:
        raise Http404("No such invitation.") from None
    invitation.project = project
    return invitation


def invitation_list(
    *, project: Project, status: InvitationStatus | None = None
) -> QuerySet[Invitation]:
    """The project's invitations, newest first; only those in `status` if given (the
    same order of precedence as Invitation.status: used, revoked, expired, pending)."""
    invitations = Invitation.objects.filter(project=project).select_related(
        "created_by", "accepted_by", "invitee"
    )
    now = timezone.now()
    if status == InvitationStatus.ACCEPTED:
        invitations = invitations.filter(accepted_at__isnull=False)
    elif status == InvitationStatus.REVOKED:
        invitations = invitations.filter(
            accepted_at__isnull=True, revoked_at__isnull=False
        )
    elif status == InvitationStatus.EXPIRED:
        invitations = invitations.filter(
            accepted_at__isnull=True, revoked_at__isnull=True, expires_at__lte=now
        )
    elif status == InvitationStatus.PENDING:
        invitations = invitations.filter(
            accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
        )
    return invitations.order_by("-created_at", "-id")


def invitation_list_for_invitee(*, user: User | AnonymousUser) -> QuerySet[Invitation]:
    """Pending invitations to `user`'s own account (an owner added them by username),
    newest first: theirs to accept or decline."""
    if not user.is_authenticated:
        return Invitation.objects.none()
    return (
        Invitation.objects.filter(
            invitee_id=user.pk,
            accepted_at__isnull=True,
            revoked_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .select_related("project", "created_by")
        .order_by("-created_at", "-id")
    )


def invitation_list_pending(*, project: Project) -> QuerySet[Invitation]:
    """Invitations whose link still works, newest first."""
    return invitation_list(project=project, status=InvitationStatus.PENDING)


# A token is 43 characters (32 random bytes, base64url); anything much longer is not
# one of ours and is not worth hashing.
INVITATION_TOKEN_MAX_LENGTH = 64


def invitation_find(*, token: str) -> Invitation | None:
    """The invitation a link's token opens, whatever its state, or None. This is the
    link page's lookup: the token is the credential, so no user is involved."""
    if not token or len(token) > INVITATION_TOKEN_MAX_LENGTH:
        return None
    return (
        Invitation.objects.select_related("project", "created_by")
        .filter(token_hash=hash_token(token))
        .first()
    )


def membership_event_list(*, project: Project) -> QuerySet[AuditEvent]:
    """The project's access log (the membership events of its audit log), newest
    first."""
    return (
        AuditEvent.objects.filter(project=project, object_type=MEMBERSHIP_OBJECT)
        .select_related("actor", "subject")
        .order_by("-created_at", "-id")
    )


def _event_without_emails(event: AuditEvent) -> AuditEvent:
    for details in (event.before, event.after):
        if isinstance(details, dict):
            details.pop("email", None)
    return event


def membership_event_list_for(
    *, project: Project, membership: Membership
) -> AuditEventsReadable:
    """The access log as `membership` may read it: emails for owners only."""
    return AuditEventsReadable(
        membership_event_list(project=project),
        membership=membership,
        user=membership.user,
    )


# ------------------------------------------------------------------ the audit log

# Turn a page of events into what `user` may read of them (another app's rule, e.g.
# review's blind queues hiding a verdict's details); registered once at start-up.
AuditReader = Callable[
    [list[AuditEvent], User | AnonymousUser, Project], list[AuditEvent]
]
_audit_readers: list[AuditReader] = []


def on_audit_read(reader: AuditReader) -> None:
    """Register `reader(events, user, project) -> events` for every read of the log:
    the events as that user may see them (masked in memory only)."""
    if reader not in _audit_readers:
        _audit_readers.append(reader)


@dataclass(frozen=True)
class AuditFilters:
    """The audit log's filters: an exact action, the actor's username, an object
    type, and a date range (both ends included, in the server's time zone)."""

    action: str = ""
    actor: str = ""
    object_type: str = ""
    since: date | None = None
    until: date | None = None

    def is_filtered(self) -> bool:
        return any((self.action, self.actor, self.object_type, self.since, self.until))


def audit_event_list(
    *, project: Project, filters: AuditFilters | None = None
) -> QuerySet[AuditEvent]:
    """The project's audit log, newest first, filtered."""
    events = AuditEvent.objects.filter(project=project)
    f = filters or AuditFilters()
    if f.action:
        events = events.filter(action=f.action)
    if f.actor:
        events = events.filter(actor__username=f.actor)
    if f.object_type:
        events = events.filter(object_type=f.object_type)
    if f.since is not None:
        events = events.filter(created_at__date__gte=f.since)
    if f.until is not None:
        events = events.filter(created_at__date__lte=f.until)
    return events.select_related("actor", "subject").order_by("-created_at", "-id")


def audit_filter_choices(*, project: Project) -> dict[str, list[str]]:
    """What the filters can pick from: the actions, object types and actors that
    occur in the project's log."""
    events = AuditEvent.objects.filter(project=project).order_by()
    return {
        "actions": sorted(set(events.values_list("action", flat=True).distinct())),
        "object_types": sorted(
            set(events.values_list("object_type", flat=True).distinct()) - {""}
        ),
        "actors": sorted(
            set(
                events.filter(actor__isnull=False)
                .values_list("actor__username", flat=True)
                .distinct()
            )
        ),
    }


def audit_events_readable(
    events: Iterable[AuditEvent], *, membership: Membership, user: User | AnonymousUser
) -> list[AuditEvent]:
    """The events as `membership` may read them: emails only for owners (as in the
    access log), then every registered reader's rule."""
    readable = list(events)
    if not membership.can_manage:
        readable = [_event_without_emails(e) for e in readable]
    for reader in _audit_readers:
        readable = reader(readable, user, membership.project)
    return readable


class AuditEventsReadable(Sequence[AuditEvent]):
    """A filtered log as one reader may read it, lazy like the queryset it wraps:
    Django's Paginator and ninja's pagination count it with len() and read one
    slice, which is masked (`audit_events_readable`) alone."""

    def __init__(
        self,
        events: QuerySet[AuditEvent],
        *,
        membership: Membership,
        user: User | AnonymousUser,
    ) -> None:
        self._events = events
        self._membership = membership
        self._user = user

    def __len__(self) -> int:
        return self._events.count()

    def count(self) -> int:  # type: ignore[override]
        return len(self)

    @overload
    def __getitem__(self, index: int) -> AuditEvent: ...
    @overload
    def __getitem__(self, index: slice) -> list[AuditEvent]: ...
    def __getitem__(self, index: int | slice) -> AuditEvent | list[AuditEvent]:
        if isinstance(index, slice):
            return audit_events_readable(
                self._events[index], membership=self._membership, user=self._user
            )
        return self[index : index + 1][0]


def audit_event_list_for(
    *, project: Project, user: User | AnonymousUser, filters: AuditFilters | None = None
) -> AuditEventsReadable:
    """The project's filtered log as `user` (a member: see project_get_for_user) may
    read it."""
    return AuditEventsReadable(
        audit_event_list(project=project, filters=filters),
        membership=project.membership,
        user=user,
    )


def require_role(
    membership: Membership, *, write: bool = False, manage: bool = False
) -> None:
    if manage and membership.role != Role.OWNER:
        raise PermissionDenied("Only project owners can do this.")
    if write and not membership.can_review:
        raise PermissionDenied("Viewers cannot change anything in this project.")


PROJECT_CREATE_STAFF_ONLY_MESSAGE = (
    "Only staff can create projects on this server; ask an administrator to create "
    "one and add you to it."
)


def project_create_allowed(*, user: User | AnonymousUser) -> bool:
    """Whether `user` may create projects: anyone signed in, or only staff when
    PROJECT_CREATE_STAFF_ONLY is on."""
    if not user.is_authenticated:
        return False
    return not settings.PROJECT_CREATE_STAFF_ONLY or bool(
        getattr(user, "is_staff", False)
    )


def require_project_create(*, user: User | AnonymousUser) -> None:
    if not project_create_allowed(user=user):
        raise PermissionDenied(PROJECT_CREATE_STAFF_ONLY_MESSAGE)


class _Judge(Protocol):
    is_offline: bool


def require_run_start(
    *, membership: Membership, judges: Iterable[_Judge | None]
) -> None:
    """Refuse a run (or a retry of its failures) the member may not start: viewers
    never; reviewers not on a paid judge (any of `judges` but the built-in offline
    one) unless the owner allows it in the project settings."""
    require_role(membership, write=True)
    paid = sorted({str(j) for j in judges if j is not None and not j.is_offline})
    if paid and not membership.can_start_paid_runs:
        raise PermissionDenied(
            f"Only project owners can start runs on a paid judge ({', '.join(paid)}) "
            "in this project; an owner can allow reviewers in the project settings."
        )


def require_rescore_save(*, membership: Membership) -> None:
    """Refuse saving a rescore (it rewrites every result's final score for everyone)
    to all but owners, and reviewers the owner allowed in the project settings."""
    require_role(membership, write=True)
    if not membership.can_save_rescore:
        raise PermissionDenied(
            "Only project owners can save a rescore in this project (it rewrites every "
            "result's final score); an owner can allow reviewers in the project settings."
        )


class OverviewPart(Protocol):
    def __call__(self, *, project: Project, user: User) -> dict[str, Any]: ...


# What other apps show on the project overview page: registered from their
# AppConfig.ready (accounts sits below them and does not import them).
_OVERVIEW_PARTS: list[OverviewPart] = []


def on_project_overview(part: OverviewPart) -> None:
    """Register `part(project=, user=) -> dict` for the project overview page; its
    "counts" are merged with the other parts' counts, its other keys added as given."""
    if part not in _OVERVIEW_PARTS:
        _OVERVIEW_PARTS.append(part)


def project_overview(*, project: Project, user: User) -> dict[str, Any]:
    """The project overview page's context: counts and lists from the registered parts."""
    overview: dict[str, Any] = {"counts": {}}
    for part in _OVERVIEW_PARTS:
        extra = dict(part(project=project, user=user))
        overview["counts"].update(extra.pop("counts", {}))
        overview.update(extra)
    return overview
