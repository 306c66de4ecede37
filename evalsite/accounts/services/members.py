"""Who may do what in a project: members and roles, accounts an owner creates,
invitations, and the access log (membership events in the project's audit log,
written in the transaction of every change they record)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone

from evalsite.accounts.models import (
    MEMBERSHIP_OBJECT,
    AuditEvent,
    Invitation,
    InvitationStatus,
    Membership,
    MembershipAction,
    Project,
    Role,
    hash_token,
)
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError


def _lock_project(project: Project) -> None:
    """Serialise membership changes of one project for the rest of the transaction, so
    two owners demoting or removing each other at once cannot both pass the last-owner
    check (each would still see the other as an owner)."""
    rows = Project.objects.select_for_update().filter(pk=project.pk).order_by()
    list(rows.values_list("pk"))


def _other_owners_exist(*, project: Project, membership: Membership) -> bool:
    return (
        Membership.objects.filter(project=project, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


def membership_event_write(
    *,
    project: Project,
    actor: User | None,
    action: MembershipAction,
    subject: User | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEvent:
    """One membership event in the project's audit log (object type "membership",
    naming the subject); callers write it inside the transaction of the change it
    records, so the change and its record commit (or not) together."""
    who = actor.get_username() if actor is not None else "system"
    whom = f" {subject.get_username()}" if subject is not None else ""
    return audit_event(
        project=project,
        actor=actor,
        subject=subject,
        action=action,
        summary=f"{who} {MembershipAction(action).label}{whom}",
        object_type=MEMBERSHIP_OBJECT,
        object_id=subject.pk if subject is not None else None,
        object_label=subject.get_username() if subject is not None else "",
        before=before,
        after=after,
    )


def _role_check(role: str) -> None:
    if role not in Role.values:
        raise ApplicationError(
            f"Unknown role {role!r}.", field_errors={"role": "Unknown role."}
        )


@transaction.atomic
def membership_set(
    *, project: Project, user: User, role: str, actor: User | None = None
) -> Membership:
    """Add `user` to the project with `role`, or change their role, and record it.

    Refuses to demote the project's last owner: every project keeps one. Setting the
    role a member already has changes nothing and records nothing."""
    _role_check(role)
    _lock_project(project)
    current = Membership.objects.filter(project=project, user=user).first()
    if current is not None and current.role == role:
        return current
    if (
        current is not None
        and current.role == Role.OWNER
        and role != Role.OWNER
        and not _other_owners_exist(project=project, membership=current)
    ):
        raise ApplicationError(
            "A project needs at least one owner: make someone else owner first.",
            field_errors={"role": "The last owner must stay owner."},
        )
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    membership_event_write(
        project=project,
        actor=actor,
        subject=user,
        action=MembershipAction.ADDED
        if current is None
        else MembershipAction.ROLE_CHANGED,
        before=None if current is None else {"role": current.role},
        after={"role": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: User | None = None) -> None:
    """Remove a member (never the last owner) and record it."""
    _lock_project(membership.project)
    # Re-read under the lock: the role may have changed since the caller loaded it.
    role = (
        Membership.objects.filter(pk=membership.pk)
        .values_list("role", flat=True)
        .first()
    )
    if role is None:
        return  # already removed
    if role == Role.OWNER and not _other_owners_exist(
        project=membership.project, membership=membership
    ):
        raise ApplicationError("A project needs at least one owner.")
    membership.delete()
    membership_event_write(
        project=membership.project,
        actor=actor,
        subject=membership.user,
        action=MembershipAction.REMOVED,
        before={"role": role},
    )


# Who has which role, per project: {project_id: {user_id: role}}.
MembershipSnapshot = dict[int, dict[int, str]]


def membership_snapshot(*, project_ids: Iterable[int]) -> MembershipSnapshot:
    """The roles in these projects now, for `membership_changes_record` after an edit
    that did not go through these services (the Django admin's forms)."""
    ids = {pk for pk in project_ids if pk is not None}
    snapshot: MembershipSnapshot = {pk: {} for pk in ids}
    rows = Membership.objects.filter(project_id__in=ids).values_list(
        "project_id", "user_id", "role"
    )
    for project_id, user_id, role in rows:
        snapshot[project_id][user_id] = role
    return snapshot


def membership_changes_record(
    *, actor: User | None, before: MembershipSnapshot, after: MembershipSnapshot
) -> None:
    """Record every difference between two snapshots as added, role changed or
    removed, so the access log stays complete whichever way memberships change."""
    projects = Project.objects.in_bulk(before.keys() | after.keys())
    user_ids = {pk for roles in (*before.values(), *after.values()) for pk in roles}
    users = User.objects.in_bulk(user_ids)
    for project_id in sorted(before.keys() | after.keys()):
        project = projects.get(project_id)
        if project is None:
            continue  # deleted: its log went with it
        old, new = before.get(project_id, {}), after.get(project_id, {})
        for user_id in sorted(old.keys() | new.keys()):
            was, now = old.get(user_id), new.get(user_id)
            if was == now:
                continue
            if was is None:
                action = MembershipAction.ADDED
            elif now is None:
                action = MembershipAction.REMOVED
            else:
                action = MembershipAction.ROLE_CHANGED
            membership_event_write(
                project=project,
                actor=actor,
                subject=users.get(user_id),
                action=action,
                before=None if was is None else {"role": was},
                after=None if now is None else {"role": now},
            )


# ------------------------------------------------------------------ new users

# Django's User.password holds the hash, not the password: this only bounds the work of
# hashing whatever a form posts.
PASSWORD_MAX_LENGTH = 256
USERNAME_MAX_LENGTH = 150
EMAIL_MAX_LENGTH = 254


def _user_create(*, username: str, email: str, password: str) -> tuple[User, str]:
    """Create an active user, every field checked. An empty `password` makes one up;
    returns the user and that generated password ("" when one was given).

    Steps: check the username (Django's validator, free regardless of case), the email,
    the password (AUTH_PASSWORD_VALIDATORS); create the row, reporting a username taken
    meanwhile as the same field error."""
    username = username.strip()
    email = email.strip()
    errors: dict[str, str] = {}
    if not username:
        errors["username"] = "Required."
    elif len(username) > USERNAME_MAX_LENGTH:
        errors["username"] = f"At most {USERNAME_MAX_LENGTH} characters."
    else:
        try:
            User.username_validator(username)
        except ValidationError as exc:
            errors["username"] = " ".join(exc.messages)
        else:
            if User.objects.filter(username__iexact=username).exists():
                errors["username"] = "This username is taken."
    if email:
        try:
            if len(email) > EMAIL_MAX_LENGTH:
                raise ValidationError(f"At most {EMAIL_MAX_LENGTH} characters.")
            validate_email(email)
        except ValidationError as exc:
            errors["email"] = " ".join(exc.messages)
    generated = ""
    if not password:
        generated = password = secrets.token_urlsafe(12)
    elif len(password) > PASSWORD_MAX_LENGTH:
        errors["password"] = f"At most {PASSWORD_MAX_LENGTH} characters."
    else:
        try:
            validate_password(password, user=User(username=username, email=email))
        except ValidationError as exc:
            errors["password"] = " ".join(exc.messages)
    if errors:
        raise ApplicationError(
            "Check the new account's " + ", ".join(errors) + ".",
            field_errors=errors,
        )
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction goes on
            user = User.objects.create_user(
                username=username, email=email, password=password
            )
    except IntegrityError:
        raise ApplicationError(
            "This username is taken.",
            field_errors={"username": "This username is taken."},
        ) from None
    return user, generated


@transaction.atomic
def member_create(
    *,
    project: Project,
    actor: User,
    username: str,
    role: str,
    email: str = "",
    password: str = "",
) -> tuple[Membership, str]:
    """Create a user and add them to the project with `role`, both recorded.

    Returns the membership and the generated password when none was given (shown to
    the owner once, never stored in clear), else ""."""
    _role_check(role)
    user, generated = _user_create(username=username, email=email, password=password)
    membership_event_write(
        project=project,
        actor=actor,
        subject=user,
        action=MembershipAction.USER_CREATED,
        after={"username": user.get_username(), "email": user.email},
    )
    membership = membership_set(project=project, user=user, role=role, actor=actor)
    return membership, generated


# ------------------------------------------------------------------ invitations

INVITATION_DAYS_DEFAULT = 7
INVITATION_DAYS_MAX = 30
# Pending invitations a project may have at once: a bound on what one owner (or a
# script with their token) can pile up.
INVITATIONS_PENDING_MAX = 100


class InvitationGoneError(ApplicationError):
    """The link was used, revoked or has expired."""

    status_code = 410


INVITATION_GONE_MESSAGES = {
    InvitationStatus.ACCEPTED: "This invitation has already been used.",
    InvitationStatus.REVOKED: "This invitation was withdrawn by an owner of the project.",
    InvitationStatus.EXPIRED: "This invitation has expired.",
}


def _invitation_summary(invitation: Invitation) -> dict[str, Any]:
    return {
        "invitation": invitation.pk,
        "role": invitation.role,
        "email": invitation.email,
        "expires_at": invitation.expires_at.isoformat(),
    }


def _pending_invitations_check(project: Project) -> None:
    """Refuse when the project has INVITATIONS_PENDING_MAX pending invitations; the
    caller holds the project lock, so the count holds until commit."""
    pending = Invitation.objects.filter(
        project=project,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=timezone.now(),
    ).count()
    if pending >= INVITATIONS_PENDING_MAX:
        raise ConflictError(
            f"This project has {pending} pending invitations; revoke some first."
        )


@transaction.atomic
def invitation_create(
    *,
    project: Project,
    actor: User,
    role: str,
    email: str = "",
    days: int = INVITATION_DAYS_DEFAULT,
) -> tuple[Invitation, str]:
    """An invitation to `project` with `role`, valid for `days` (1–30), recorded.

    Returns the row and the raw token of its link: shown once, only its SHA-256 is
    stored (like API tokens)."""
    _role_check(role)
    if not 1 <= days <= INVITATION_DAYS_MAX:
        raise ApplicationError(
            f"An invitation lasts 1 to {INVITATION_DAYS_MAX} days.",
            field_errors={"days": f"From 1 to {INVITATION_DAYS_MAX}."},
        )
    email = email.strip()
    if email:
        try:
            if len(email) > EMAIL_MAX_LENGTH:
                raise ValidationError(f"At most {EMAIL_MAX_LENGTH} characters.")
            validate_email(email)
        except ValidationError as exc:
            message = " ".join(exc.messages)
            raise ApplicationError(
                f"email: {message}", field_errors={"email": message}
            ) from None
    _lock_project(project)
    _pending_invitations_check(project)
    now = timezone.now()
    raw = Invitation.generate_raw()
    invitation = Invitation.objects.create(
        project=project,
        email=email,
        role=role,
        token_hash=hash_token(raw),
        created_by=actor,
        expires_at=now + timedelta(days=days),
    )
    membership_event_write(
        project=project,
        actor=actor,
        action=MembershipAction.INVITED,
        after=_invitation_summary(invitation),
    )
    return invitation, raw


def member_invite_message(*, username: str, role: str) -> str:
    """What an owner is told after adding `username`, whether or not that account
    exists: the answer must not tell existing names from unknown ones."""
    return (
        f"If a user named “{username}” exists, they have been invited as "
        f"{str(Role(role).label).lower()}: they join when they accept it on their "
        "dashboard."
    )


@transaction.atomic
def member_add(
    *, project: Project, actor: User, username: str, role: str
) -> Membership | None:
    """Change a member's role, or invite the account named `username` to join.

    Nobody joins a project without consent: a non-member gets an invitation bound to
    their account (no link to share; it lasts INVITATION_DAYS_DEFAULT days) which
    they accept or decline on their dashboard. Returns the membership when `username`
    is already a member, else None, and answers an unknown name exactly like an
    existing one (same return, same errors) so usernames cannot be enumerated.

    Steps: check the role; lock the project; a member: set the role; else check the
    pending-invitation cap (before looking the name up, so a full project refuses
    both alike); an existing non-member: renew their pending invitation or create
    one, recorded; an unknown name: nothing."""
    _role_check(role)
    _lock_project(project)
    user = User.objects.filter(username=username).first()
    if (
        user is not None
        and Membership.objects.filter(project=project, user=user).exists()
    ):
        return membership_set(project=project, user=user, role=role, actor=actor)
    _pending_invitations_check(project)
    if user is None:
        return None
    now = timezone.now()
    pending = Invitation.objects.filter(
        project=project,
        invitee=user,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
        expires_at__gt=now,
    ).first()
    if pending is not None:
        # Asking again renews the one invitation rather than stacking copies.
        pending.role = role
        pending.expires_at = now + timedelta(days=INVITATION_DAYS_DEFAULT)
        pending.save(update_fields=["role", "expires_at"])
        invitation = pending
    else:
        invitation = Invitation.objects.create(
            project=project,
            role=role,
            invitee=user,
            # Never shown: an invitation to an account is accepted by that account.
            token_hash=hash_token(Invitation.generate_raw()),
            created_by=actor,
            expires_at=now + timedelta(days=INVITATION_DAYS_DEFAULT),
        )
    membership_event_write(
        project=project,
        actor=actor,
        subject=user,
        action=MembershipAction.INVITED,
        after=_invitation_summary(invitation),
    )
    return None


def _invitation_lock_for_invitee(*, invitation_id: int, user: User) -> Invitation:
    invitation = (
        Invitation.objects.select_for_update()
        .filter(pk=invitation_id, invitee=user)
        .first()
    )
    if invitation is None:
        raise Http404("No such invitation.")
    status = invitation.status()
    if status != InvitationStatus.PENDING:
        raise InvitationGoneError(INVITATION_GONE_MESSAGES[status])
    return invitation


@transaction.atomic
def invitation_accept_invited(*, invitation_id: int, user: User) -> Membership:
    """The invitee of an invitation to their account accepts it and joins with its
    role; recorded. 404 for anyone else's invitation, 410 for one no longer pending,
    409 when already a member."""
    invitation = _invitation_lock_for_invitee(invitation_id=invitation_id, user=user)
    return _invitation_use(invitation=invitation, user=user)


@transaction.atomic
def invitation_decline(*, invitation_id: int, user: User) -> None:
    """The invitee of an invitation to their account declines it: it is revoked and
    recorded. 404 for anyone else's invitation, 410 for one no longer pending."""
    invitation = _invitation_lock_for_invitee(invitation_id=invitation_id, user=user)
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    membership_event_write(
        project=invitation.project,
        actor=user,
        subject=user,
        action=MembershipAction.INVITATION_REVOKED,
        before=_invitation_summary(invitation),
    )


def _invitation_lock_pending(*, token: str) -> Invitation:
    """The pending invitation of `token`, its row locked until commit so two visitors
    cannot both use one link. Raises Http404 for an unknown token and
    InvitationGoneError for a used, revoked or expired one."""
    invitation = (
        Invitation.objects.select_for_update()
        .filter(token_hash=hash_token(token))
        .first()
    )
    if invitation is None:
        raise Http404("No such invitation.")
    status = invitation.status()
    if status != InvitationStatus.PENDING:
        raise InvitationGoneError(INVITATION_GONE_MESSAGES[status])
    return invitation


def _invitation_use(*, invitation: Invitation, user: User) -> Membership:
    # The project is the invitation's own: nothing the visitor sends can name another.
    project = Project.objects.get(pk=invitation.project_id)
    _lock_project(project)
    current = Membership.objects.filter(project=project, user=user).first()
    if current is not None:
        # An invitation never changes a member's role (it could demote the last
        # owner); that is the members list's job. The link stays usable.
        raise ConflictError(
            f"You are already a member of {project.name} "
            f"({current.get_role_display().lower()})."
        )
    membership = Membership.objects.create(
        project=project, user=user, role=invitation.role
    )
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    membership_event_write(
        project=project,
        actor=user,
        subject=user,
        action=MembershipAction.INVITATION_ACCEPTED,
        after={"role": invitation.role, "invitation": invitation.pk},
    )
    return membership


@transaction.atomic
def invitation_accept(*, token: str, user: User) -> Membership:
    """A signed-in user joins the invitation's project with its role; recorded.

    Refuses (and leaves the link usable) when the user is already a member."""
    invitation = _invitation_lock_pending(token=token)
    return _invitation_use(invitation=invitation, user=user)


@transaction.atomic
def invitation_signup(
    *, token: str, username: str, password: str, email: str = ""
) -> Membership:
    """A visitor creates an account through an invitation and joins its project.

    Steps: lock the pending invitation (a dead link creates no account); create the
    user (the password is required here and checked by Django's validators); record
    it; join as the invitation says."""
    invitation = _invitation_lock_pending(token=token)
    if not password:
        raise ApplicationError(
            "Choose a password.", field_errors={"password": "Required."}
        )
    user, _ = _user_create(username=username, email=email, password=password)
    membership_event_write(
        project=invitation.project,
        actor=user,
        subject=user,
        action=MembershipAction.USER_CREATED,
        after={
            "username": user.get_username(),
            "email": user.email,
            "invitation": invitation.pk,
        },
    )
    return _invitation_use(invitation=invitation, user=user)


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: User) -> Invitation:
    """Withdraw an unused invitation (its link answers 410 from now on); recorded.
    Revoking twice changes nothing; a used invitation cannot be revoked."""
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if locked.revoked_at is not None:
        return locked
    if locked.accepted_at is not None:
        raise ConflictError(
            "This invitation has already been used: remove the member instead."
        )
    locked.revoked_at = timezone.now()
    locked.save(update_fields=["revoked_at"])
    membership_event_write(
        project=locked.project,
        actor=actor,
        action=MembershipAction.INVITATION_REVOKED,
        before=_invitation_summary(locked),
    )
    return locked
