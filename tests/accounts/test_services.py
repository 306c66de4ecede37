"""People services: roles, accounts an owner creates, invitations (expiry, reuse,
revocation, project binding) and the access log each change writes."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.http import Http404

from evalsite.accounts.models import (
    AuditEvent,
    Invitation,
    InvitationStatus,
    Membership,
    MembershipAction,
    Role,
    hash_token,
)
from evalsite.accounts.services import (
    INVITATIONS_PENDING_MAX,
    InvitationGoneError,
    invitation_accept,
    invitation_create,
    invitation_revoke,
    invitation_signup,
    member_add,
    member_create,
    membership_remove,
    membership_set,
    project_create,
)
from evalsite.core.exceptions import ApplicationError, ConflictError
from tests.factories import InvitationFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

User = get_user_model()
GOOD_PASSWORD = "correct-horse-battery"


def _events(project) -> list[tuple[str, str | None, str | None, dict, dict]]:
    """The project's access log, oldest first: (action, actor, subject, before, after)."""
    return [
        (
            e.action,
            e.actor.username if e.actor else None,
            e.subject.username if e.subject else None,
            e.before,
            e.after,
        )
        for e in AuditEvent.objects.filter(project=project).order_by("id")
    ]


def _role(project, user) -> str | None:
    return (
        Membership.objects.filter(project=project, user=user)
        .values_list("role", flat=True)
        .first()
    )


# ------------------------------------------------------------------ members


def test_project_create_records_its_first_owner():
    user = UserFactory(username="ann")
    project = project_create(user=user, name="P")
    assert _events(project) == [("member_added", "ann", "ann", None, {"role": "owner"})]


def test_membership_set_records_added_and_role_changed(project, owner):
    newcomer = UserFactory(username="nina")
    membership_set(project=project, user=newcomer, role=Role.VIEWER, actor=owner)
    membership_set(project=project, user=newcomer, role=Role.ADJUDICATOR, actor=owner)
    membership_set(project=project, user=newcomer, role=Role.ADJUDICATOR, actor=owner)
    assert _events(project) == [
        ("member_added", "olivia", "nina", None, {"role": "viewer"}),
        ("role_changed", "olivia", "nina", {"role": "viewer"}, {"role": "adjudicator"}),
    ]  # setting the same role again records nothing
    assert Membership.objects.get(user=newcomer).can_adjudicate


def test_membership_set_refusal_writes_no_event(project, owner):
    with pytest.raises(ApplicationError, match="at least one owner"):
        membership_set(project=project, user=owner, role=Role.ADJUDICATOR, actor=owner)
    assert _events(project) == []


def test_membership_remove_records_the_role_it_removed(project, owner, reviewer):
    membership_remove(membership=Membership.objects.get(user=reviewer), actor=owner)
    assert _events(project) == [
        ("member_removed", "olivia", "rita", {"role": "reviewer"}, None)
    ]
    own = Membership.objects.get(user=owner)
    with pytest.raises(ApplicationError, match="at least one owner"):
        membership_remove(membership=own, actor=owner)
    assert len(_events(project)) == 1


def test_member_create_makes_an_account_with_a_generated_password(project, owner):
    membership, generated = member_create(
        project=project, actor=owner, username="gus", role=Role.REVIEWER
    )
    user = membership.user
    assert len(generated) >= 16 and user.check_password(generated)
    assert user.is_active and membership.role == Role.REVIEWER
    assert [e[:3] for e in _events(project)] == [
        ("user_created", "olivia", "gus"),
        ("member_added", "olivia", "gus"),
    ]


def test_member_create_keeps_the_owners_password_and_shows_nothing(project, owner):
    membership, generated = member_create(
        project=project,
        actor=owner,
        username="hal",
        email="hal@example.com",
        password=GOOD_PASSWORD,
        role=Role.VIEWER,
    )
    assert generated == ""
    assert membership.user.check_password(GOOD_PASSWORD)
    assert membership.user.email == "hal@example.com"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"username": ""}, "username"),
        ({"username": "bad name!"}, "username"),
        ({"username": "x" * 151}, "username"),
        ({"username": "OLIVIA"}, "username"),  # taken, whatever the case
        ({"email": "not-an-email"}, "email"),
        ({"password": "short"}, "password"),
        ({"password": "password123"}, "password"),  # a common password
        ({"password": "p" * 257}, "password"),
        ({"role": "superuser"}, "role"),
    ],
)
def test_member_create_refuses_bad_fields_and_writes_nothing(
    project, owner, fields, field
):
    users = User.objects.count()
    data = {"username": "ivy", "role": Role.REVIEWER} | fields
    with pytest.raises(ApplicationError) as exc:
        member_create(project=project, actor=owner, **data)
    assert field in exc.value.field_errors
    assert User.objects.count() == users
    assert _events(project) == []


# ------------------------------------------------------------------ invitations


def test_invitation_create_stores_only_the_hash_and_records_it(
    project, owner, frozen_clock
):
    invitation, raw = invitation_create(
        project=project, actor=owner, role=Role.REVIEWER, email="new@example.com"
    )
    assert raw not in invitation.token_hash and invitation.token_hash == hash_token(raw)
    assert not Invitation.objects.filter(token_hash=raw).exists()
    assert invitation.expires_at - invitation.created_at == timedelta(days=7)
    assert invitation.status() == InvitationStatus.PENDING
    [event] = _events(project)
    assert event[:4] == ("invited", "olivia", None, None)
    assert event[4]["role"] == "reviewer" and event[4]["email"] == "new@example.com"


@pytest.mark.parametrize("days", [0, 31, -1])
def test_invitation_create_refuses_a_lifetime_outside_1_to_30_days(
    project, owner, days
):
    with pytest.raises(ApplicationError) as exc:
        invitation_create(project=project, actor=owner, role=Role.VIEWER, days=days)
    assert "days" in exc.value.field_errors
    assert not Invitation.objects.exists()


def test_invitation_create_refuses_unknown_roles_and_bad_emails(project, owner):
    with pytest.raises(ApplicationError):
        invitation_create(project=project, actor=owner, role="root")
    with pytest.raises(ApplicationError) as exc:
        invitation_create(project=project, actor=owner, role="viewer", email="x@")
    assert "email" in exc.value.field_errors
    assert not Invitation.objects.exists() and _events(project) == []


def test_invitation_create_bounds_the_pending_invitations(project, owner):
    InvitationFactory.create_batch(INVITATIONS_PENDING_MAX, project=project)
    with pytest.raises(ConflictError, match="pending invitations"):
        invitation_create(project=project, actor=owner, role=Role.VIEWER)
    # Revoked, used or expired ones do not count.
    Invitation.objects.filter(pk=Invitation.objects.first().pk).update(
        expires_at=Invitation.objects.first().created_at
    )
    invitation_create(project=project, actor=owner, role=Role.VIEWER)


def test_invitation_accept_adds_the_member_once(project, owner, outsider):
    invitation, raw = invitation_create(
        project=project, actor=owner, role=Role.ADJUDICATOR
    )
    membership = invitation_accept(token=raw, user=outsider)
    assert membership.project == project and membership.role == Role.ADJUDICATOR
    invitation.refresh_from_db()
    assert invitation.accepted_by == outsider and invitation.accepted_at is not None
    assert invitation.status() == InvitationStatus.ACCEPTED
    assert _events(project)[-1] == (
        "invitation_accepted",
        "oscar",
        "oscar",
        None,
        {"role": "adjudicator", "invitation": invitation.pk},
    )
    # The link is spent, for the same user and for anyone else.
    for user in (outsider, UserFactory()):
        with pytest.raises(InvitationGoneError, match="already been used"):
            invitation_accept(token=raw, user=user)
    assert Membership.objects.filter(project=project).count() == 2


def test_invitation_expires(project, owner, outsider, frozen_clock):
    _, raw = invitation_create(project=project, actor=owner, role="viewer", days=1)
    frozen_clock.shift(timedelta(days=1) - timedelta(seconds=1))
    invitation = Invitation.objects.get()
    assert invitation.status() == InvitationStatus.PENDING
    frozen_clock.shift(timedelta(seconds=1))
    assert invitation.status() == InvitationStatus.EXPIRED
    with pytest.raises(InvitationGoneError, match="expired") as exc:
        invitation_accept(token=raw, user=outsider)
    assert exc.value.status_code == 410
    assert _role(project, outsider) is None
    assert [e[0] for e in _events(project)] == ["invited"]


def test_a_revoked_invitation_cannot_be_used(project, owner, outsider):
    invitation, raw = invitation_create(project=project, actor=owner, role="viewer")
    invitation_revoke(invitation=invitation, actor=owner)
    invitation_revoke(invitation=invitation, actor=owner)  # twice: one event
    with pytest.raises(InvitationGoneError, match="withdrawn"):
        invitation_accept(token=raw, user=outsider)
    with pytest.raises(InvitationGoneError):
        invitation_signup(token=raw, username="zed", password=GOOD_PASSWORD)
    assert not User.objects.filter(username="zed").exists()
    assert [e[0] for e in _events(project)] == ["invited", "invitation_revoked"]
    assert _events(project)[1][3]["role"] == "viewer"


def test_a_used_invitation_cannot_be_revoked(project, owner, outsider):
    invitation, raw = invitation_create(project=project, actor=owner, role="viewer")
    invitation_accept(token=raw, user=outsider)
    with pytest.raises(ConflictError, match="already been used"):
        invitation_revoke(invitation=invitation, actor=owner)


def test_an_unknown_token_is_404(outsider):
    with pytest.raises(Http404):
        invitation_accept(token="nope", user=outsider)


def test_an_invitation_joins_only_its_own_project(project, owner, outsider):
    """The project comes from the invitation row, never from the caller."""
    other = ProjectFactory()
    _, raw = invitation_create(project=project, actor=owner, role=Role.OWNER)
    visitor = UserFactory(username="vera")
    invitation_accept(token=raw, user=visitor)
    assert _role(project, visitor) == Role.OWNER
    assert _role(other, visitor) is None
    assert not AuditEvent.objects.filter(project=other).exists()


def test_an_invitation_never_changes_a_members_role(project, owner):
    """Accepting a viewer invitation must not demote anyone (least of all the last
    owner); the link stays usable for someone else."""
    _, raw = invitation_create(project=project, actor=owner, role=Role.VIEWER)
    with pytest.raises(ConflictError, match="already a member"):
        invitation_accept(token=raw, user=owner)
    assert _role(project, owner) == Role.OWNER
    assert Invitation.objects.get().status() == InvitationStatus.PENDING
    invitation_accept(token=raw, user=UserFactory())


def test_invitation_signup_creates_the_account_and_joins(project, owner):
    invitation, raw = invitation_create(project=project, actor=owner, role="reviewer")
    membership = invitation_signup(
        token=raw, username="newbie", email="n@example.com", password=GOOD_PASSWORD
    )
    user = membership.user
    assert user.check_password(GOOD_PASSWORD) and user.email == "n@example.com"
    assert membership.project == project and membership.role == Role.REVIEWER
    assert [e[:3] for e in _events(project)] == [
        ("invited", "olivia", None),
        ("user_created", "newbie", "newbie"),
        ("invitation_accepted", "newbie", "newbie"),
    ]
    assert _events(project)[1][4]["invitation"] == invitation.pk


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"password": ""}, "password"),
        ({"password": "newbie-user"}, "password"),  # too like the username
        ({"password": "12345678"}, "password"),
        ({"username": "olivia"}, "username"),
        ({"username": "a/b"}, "username"),
    ],
)
def test_invitation_signup_checks_the_account_and_keeps_the_link(
    project, owner, fields, field
):
    _, raw = invitation_create(project=project, actor=owner, role="reviewer")
    users = User.objects.count()
    data = {"username": "newbie-user", "password": GOOD_PASSWORD} | fields
    with pytest.raises(ApplicationError) as exc:
        invitation_signup(token=raw, **data)
    assert field in exc.value.field_errors
    assert User.objects.count() == users
    assert Invitation.objects.get().status() == InvitationStatus.PENDING
    assert [e[0] for e in _events(project)] == ["invited"]


def test_the_change_and_its_event_commit_together(project, owner, monkeypatch):
    """If the event cannot be written, the change is not kept either; if the change
    fails after its event, the event is not kept."""
    from evalsite.accounts.services import members

    def boom(*args, **kwargs):
        raise RuntimeError("database went away")

    newcomer = UserFactory()
    _, raw = invitation_create(project=project, actor=owner, role="viewer")
    with monkeypatch.context() as patch:
        patch.setattr(members, "audit_event", boom)
        with pytest.raises(RuntimeError):
            membership_set(project=project, user=newcomer, role="viewer", actor=owner)
        with pytest.raises(RuntimeError):
            invitation_accept(token=raw, user=newcomer)
        with pytest.raises(RuntimeError):
            member_create(project=project, actor=owner, username="kim", role="viewer")
    assert _role(project, newcomer) is None
    assert not User.objects.filter(username="kim").exists()
    assert Invitation.objects.get().status() == InvitationStatus.PENDING

    with monkeypatch.context() as patch:
        patch.setattr(members.Invitation, "save", boom)
        with pytest.raises(RuntimeError):
            invitation_signup(token=raw, username="lou", password=GOOD_PASSWORD)
    assert not User.objects.filter(username="lou").exists()
    assert [e[0] for e in _events(project)] == ["invited"]


def test_every_action_has_a_label():
    for action in MembershipAction:
        event = AuditEvent(action=action)
        assert event.action_label and event.action_label != action.value


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite locks the whole database"
)
@pytest.mark.django_db(transaction=True)
def test_two_visitors_racing_for_one_link_make_one_member():
    """The invitation row is locked while it is spent: of two sign-ups at once, one
    joins and the other is told the link was used (and gets no account)."""
    owner = UserFactory(username="olivia")
    project = project_create(user=owner, name="Race")
    _, raw = invitation_create(project=project, actor=owner, role=Role.REVIEWER)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def sign_up(username: str) -> None:
        try:
            barrier.wait()
            invitation_signup(token=raw, username=username, password=GOOD_PASSWORD)
            outcomes.append("joined")
        except InvitationGoneError:
            outcomes.append("gone")
        finally:
            connection.close()

    threads = [threading.Thread(target=sign_up, args=(n,)) for n in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["gone", "joined"]
    assert Membership.objects.filter(project=project, role=Role.REVIEWER).count() == 1
    assert User.objects.filter(username__in=["ann", "bob"]).count() == 1
    assert _events(project)[-1][0] == "invitation_accepted"


def test_member_add_refuses_unknown_and_existing_names_alike_when_full(
    project, owner, monkeypatch
):
    UserFactory(username="walt")
    monkeypatch.setattr("evalsite.accounts.services.members.INVITATIONS_PENDING_MAX", 0)
    messages = []
    for username in ("walt", "ghost"):
        with pytest.raises(ConflictError) as caught:
            member_add(project=project, actor=owner, username=username, role="viewer")
        messages.append(caught.value.message)
    assert messages[0] == messages[1]
