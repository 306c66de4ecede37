"""People pages: the members list (roles, new accounts), invitations and their link
page, and the access log on the project settings page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evalsite.accounts.models import (
    AuditEvent,
    Invitation,
    InvitationStatus,
    Membership,
    Role,
    hash_token,
)
from evalsite.accounts.services import invitation_create, invitation_revoke
from tests.conftest import login
from tests.factories import (
    InvitationFactory,
    MembershipEventFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

User = get_user_model()
GOOD_PASSWORD = "correct-horse-battery"
HX = {"HTTP_HX_REQUEST": "true"}


def _settings(project) -> str:
    return reverse("accounts:settings", args=[project.pk])


def _role(project, user) -> str | None:
    return (
        Membership.objects.filter(project=project, user=user)
        .values_list("role", flat=True)
        .first()
    )


def _actions(project) -> list[str]:
    return list(
        AuditEvent.objects.filter(project=project)
        .order_by("id")
        .values_list("action", flat=True)
    )


# ------------------------------------------------------------------ settings page


def test_owner_sees_role_selects_with_adjudicator_and_the_people_forms(
    client, project, owner, reviewer
):
    html = login(client, owner).get(_settings(project)).content.decode()
    membership = Membership.objects.get(user=reviewer)
    assert reverse("accounts:member_role", args=[project.pk, membership.pk]) in html
    assert '<option value="adjudicator"' in html
    for form_id in ("member-add-form", "member-create-form", "invitation-form"):
        assert f'id="{form_id}"' in html
    assert 'id="access-log"' in html


def test_viewer_sees_members_and_the_log_but_no_forms(client, project, owner, viewer):
    html = login(client, viewer).get(_settings(project)).content.decode()
    assert "olivia" in html and 'id="access-log"' in html
    for form_id in ("member-add-form", "member-create-form", "invitation-form"):
        assert f'id="{form_id}"' not in html
    assert "member-role-form" not in html and "invitation-revoke" not in html


def test_only_owners_see_invitations_and_invitee_emails_on_the_page(
    client, project, owner, reviewer, viewer
):
    invitation, _ = invitation_create(
        project=project, actor=owner, role=Role.VIEWER, email="secret@example.com"
    )
    invitation_revoke(invitation=invitation, actor=owner)
    invitation_create(
        project=project, actor=owner, role=Role.VIEWER, email="pending@example.com"
    )
    for user in (reviewer, viewer):
        html = login(client, user).get(_settings(project)).content.decode()
        assert 'id="access-log"' in html and "invitation #" in html
        assert 'id="invitation-list"' not in html
        assert "secret@example.com" not in html
        assert "pending@example.com" not in html
    html = login(client, owner).get(_settings(project)).content.decode()
    assert 'id="invitation-list"' in html
    assert "secret@example.com" in html and "pending@example.com" in html


# ------------------------------------------------------------------ roles


def _role_url(project, membership) -> str:
    return reverse("accounts:member_role", args=[project.pk, membership.pk])


def test_owner_changes_a_role_and_it_is_logged(client, project, owner, reviewer):
    membership = Membership.objects.get(user=reviewer)
    login(client, owner)
    response = client.post(_role_url(project, membership), {"role": "adjudicator"})
    assert response.status_code == 302 and response.url == _settings(project)
    assert _role(project, reviewer) == Role.ADJUDICATOR
    event = AuditEvent.objects.get()
    assert (event.actor, event.subject, event.action) == (
        owner,
        reviewer,
        "role_changed",
    )
    assert (event.before, event.after) == (
        {"role": "reviewer"},
        {"role": "adjudicator"},
    )
    page = client.get(_settings(project)).content.decode()
    assert "rita is now adjudicator." in page
    assert "reviewer → adjudicator" in page


def test_member_role_refuses_the_last_owner_viewers_outsiders_and_get(
    client, project, owner, viewer, outsider
):
    own = Membership.objects.get(user=owner)
    url = _role_url(project, own)
    login(client, owner)
    page = client.post(url, {"role": "viewer"}, follow=True).content.decode()
    assert "at least one owner" in page
    assert client.post(url, {"role": "root"}).status_code == 302
    assert client.get(url).status_code == 405
    assert _role(project, owner) == Role.OWNER

    assert login(client, viewer).post(url, {"role": "owner"}).status_code == 403
    viewer_row = Membership.objects.get(user=viewer)
    assert (
        client.post(_role_url(project, viewer_row), {"role": "owner"}).status_code
        == 403
    )
    assert login(client, outsider).post(url, {"role": "viewer"}).status_code == 404
    # The outsider's own project in the path, our membership's id: still 404.
    theirs = outsider.memberships.get().project
    assert client.post(_role_url(theirs, own), {"role": "viewer"}).status_code == 404
    assert _role(project, owner) == Role.OWNER
    assert _role(project, viewer) == Role.VIEWER
    assert AuditEvent.objects.filter(project=project).count() == 0


def test_adding_a_username_answers_alike_whether_or_not_it_exists(
    client, project, owner
):
    """No enumeration: an unknown name and an existing account get the same status,
    redirect and message; only the existing one gets an invitation."""
    UserFactory(username="walt")
    login(client, owner)
    answers = {}
    for username in ("walt", "ghost"):
        response = client.post(
            reverse("accounts:member_set", args=[project.pk]),
            {"username": username, "role": "reviewer"},
        )
        page = client.get(response.url).content.decode()
        message = re.search(r"If a user named “[^”]*” exists[^<]*", page).group()
        answers[username] = (
            response.status_code,
            response.url,
            message.replace(username, "NAME"),
        )
    assert answers["walt"] == answers["ghost"]
    assert answers["walt"][0] == 302
    assert "No user named" not in page
    assert list(Invitation.objects.values_list("invitee__username", flat=True)) == [
        "walt"
    ]


def test_adding_an_existing_user_invites_them_until_they_accept(client, project, owner):
    walt = UserFactory(username="walt")
    login(client, owner).post(
        reverse("accounts:member_set", args=[project.pk]),
        {"username": "walt", "role": "adjudicator"},
    )
    assert _role(project, walt) is None  # no membership without consent
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.subject) == ("invited", owner, walt)
    invitation = Invitation.objects.get(invitee=walt)
    # The invitee sees it on their dashboard; nobody else can answer it.
    html = login(client, walt).get(reverse("accounts:dashboard")).content.decode()
    assert 'id="invitations-for-me"' in html and "Acme RAG" in html
    respond = reverse("accounts:invitation_respond", args=[invitation.pk])
    other = UserFactory()
    login(client, other).post(respond, {"answer": "accept"})
    assert _role(project, other) is None
    response = login(client, walt).post(respond, {"answer": "accept"})
    assert response.status_code == 302
    assert response.url == reverse("accounts:project", args=[project.pk])
    assert _role(project, walt) == Role.ADJUDICATOR
    assert _actions(project)[-1] == "invitation_accepted"
    assert client.get(reverse("accounts:dashboard")).status_code == 200
    assert (
        "invitations-for-me"
        not in client.get(reverse("accounts:dashboard")).content.decode()
    )


def test_an_invitee_can_decline(client, project, owner):
    walt = UserFactory(username="walt")
    login(client, owner).post(
        reverse("accounts:member_set", args=[project.pk]),
        {"username": "walt", "role": "viewer"},
    )
    invitation = Invitation.objects.get(invitee=walt)
    respond = reverse("accounts:invitation_respond", args=[invitation.pk])
    login(client, walt).post(respond, {"answer": "decline"})
    invitation.refresh_from_db()
    assert invitation.status() == InvitationStatus.REVOKED
    assert _role(project, walt) is None
    client.post(respond, {"answer": "accept"})
    assert _role(project, walt) is None
    assert client.get(respond).status_code == 405


def test_removing_a_member_is_logged(client, project, owner, reviewer):
    membership = Membership.objects.get(user=reviewer)
    login(client, owner).post(
        reverse("accounts:member_remove", args=[project.pk, membership.pk]),
        {"confirm": "yes"},
    )
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.subject) == (
        "member_removed",
        owner,
        reviewer,
    )
    assert event.before == {"role": "reviewer"}


# ------------------------------------------------------------------ new accounts


def _create_url(project) -> str:
    return reverse("accounts:member_create", args=[project.pk])


def test_owner_creates_an_account_and_sees_its_password_once(client, project, owner):
    login(client, owner)
    response = client.post(
        _create_url(project), {"username": "gwen", "email": "", "role": "reviewer"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    password = re.search(r'id="new-user-password">.*?<code>(.*?)</code>', html).group(1)
    user = User.objects.get(username="gwen")
    assert user.check_password(password)
    assert _role(project, user) == Role.REVIEWER
    assert password not in client.get(_settings(project)).content.decode()
    assert _actions(project) == ["user_created", "member_added"]
    assert Client().login(username="gwen", password=password)


def test_owner_sets_the_password_of_a_new_account(client, project, owner):
    response = login(client, owner).post(
        _create_url(project),
        {"username": "hank", "password": GOOD_PASSWORD, "role": "viewer"},
    )
    assert response.status_code == 302
    assert User.objects.get(username="hank").check_password(GOOD_PASSWORD)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"username": "olivia"}, "This username is taken."),
        ({"username": "no spaces"}, "Enter a valid username."),
        ({"password": "short"}, "This password is too short."),
        ({"email": "nope"}, "Enter a valid email address."),
        ({"role": "root"}, "Select a valid choice."),
    ],
)
def test_account_creation_shows_field_errors(client, project, owner, data, error):
    users = User.objects.count()
    response = login(client, owner).post(
        _create_url(project), {"username": "ivy", "role": "viewer"} | data
    )
    assert response.status_code == 400
    assert error in response.content.decode()
    assert User.objects.count() == users and _actions(project) == []


def test_viewers_and_outsiders_cannot_create_accounts(
    client, project, viewer, outsider
):
    data = {"username": "mallory", "role": "owner"}
    assert login(client, viewer).post(_create_url(project), data).status_code == 403
    assert login(client, outsider).post(_create_url(project), data).status_code == 404
    assert login(client, outsider).get(_create_url(project)).status_code == 405
    assert not User.objects.filter(username="mallory").exists()


def test_people_forms_need_the_csrf_token(project, owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    for url, data in [
        (_create_url(project), {"username": "eve", "role": "owner"}),
        (reverse("accounts:invitation_create", args=[project.pk]), {"role": "owner"}),
    ]:
        assert client.post(url, data).status_code == 403
    assert not User.objects.filter(username="eve").exists()
    assert not Invitation.objects.exists()


# ------------------------------------------------------------------ invitations


def _invite_url(token: str) -> str:
    return reverse("accounts:invite", args=[token])


def _new_link(html: str) -> str:
    return re.search(r'id="new-invitation-link">(.*?)</code>', html).group(1)


def test_owner_creates_an_invitation_and_sees_its_link_once(
    client, project, owner, frozen_clock
):
    login(client, owner)
    response = client.post(
        reverse("accounts:invitation_create", args=[project.pk]),
        {"role": "adjudicator", "email": "amy@example.com", "days": "3"},
    )
    assert response.status_code == 200
    link = _new_link(response.content.decode())
    assert link.startswith("http://testserver/invite/")
    token = link.rstrip("/").rsplit("/", 1)[-1]
    invitation = Invitation.objects.get()
    assert invitation.token_hash == hash_token(token)
    assert (invitation.role, invitation.email) == ("adjudicator", "amy@example.com")
    assert invitation.expires_at - invitation.created_at == timedelta(days=3)
    page = client.get(_settings(project)).content.decode()
    assert token not in page and "amy@example.com" in page
    assert _actions(project) == ["invited"]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"days": "31"}, "less than or equal to 30"),
        ({"days": "0"}, "greater than or equal to 1"),
        ({"days": ""}, "This field is required."),
        ({"email": "x@"}, "Enter a valid email address."),
        ({"role": "root"}, "Select a valid choice."),
    ],
)
def test_invitation_form_shows_field_errors(client, project, owner, data, error):
    response = login(client, owner).post(
        reverse("accounts:invitation_create", args=[project.pk]),
        {"role": "reviewer", "days": "7"} | data,
    )
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Invitation.objects.exists()


def test_only_owners_invite_or_revoke(client, project, owner, viewer, outsider):
    invitation = InvitationFactory(project=project)
    create = reverse("accounts:invitation_create", args=[project.pk])
    revoke = reverse("accounts:invitation_revoke", args=[project.pk, invitation.pk])
    data = {"role": "owner", "days": "7"}
    login(client, viewer)
    assert client.post(create, data).status_code == 403
    assert client.post(revoke).status_code == 403
    login(client, outsider)
    assert client.post(create, data).status_code == 404
    assert client.post(revoke).status_code == 404
    theirs = outsider.memberships.get().project
    other_path = reverse("accounts:invitation_revoke", args=[theirs.pk, invitation.pk])
    assert client.post(other_path).status_code == 404
    assert client.get(revoke).status_code == 405
    invitation.refresh_from_db()
    assert invitation.revoked_at is None and Invitation.objects.count() == 1


def test_owner_revokes_a_pending_invitation(client, project, owner):
    invitation = InvitationFactory(project=project, token="abc")
    login(client, owner)
    response = client.post(
        reverse("accounts:invitation_revoke", args=[project.pk, invitation.pk])
    )
    assert response.status_code == 302
    invitation.refresh_from_db()
    assert invitation.status() == InvitationStatus.REVOKED
    assert _actions(project) == ["invitation_revoked"]
    assert "No pending invitations." in client.get(_settings(project)).content.decode()
    # An invitation of another project is not reachable through this one.
    other = InvitationFactory(project=ProjectFactory())
    url = reverse("accounts:invitation_revoke", args=[project.pk, other.pk])
    assert client.post(url).status_code == 404


# ------------------------------------------------------------------ the link page


def test_a_visitor_signs_up_through_the_link_and_lands_in_the_project(client, project):
    InvitationFactory(project=project, token="t0ken", role=Role.REVIEWER)
    page = client.get(_invite_url("t0ken"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Join Acme RAG" in html and 'id="invite-signup-form"' in html
    assert page["Cache-Control"].startswith("max-age=0")
    response = client.post(
        _invite_url("t0ken"),
        {"username": "nora", "password": GOOD_PASSWORD, "password2": GOOD_PASSWORD},
    )
    assert response.status_code == 302
    assert response.url == reverse("accounts:project", args=[project.pk])
    nora = User.objects.get(username="nora")
    assert _role(project, nora) == Role.REVIEWER
    landing = client.get(response.url)  # signed in
    assert (
        landing.status_code == 200 and "Welcome to Acme RAG" in landing.content.decode()
    )
    assert _actions(project) == ["user_created", "invitation_accepted"]
    # The link is spent.
    again = Client().get(_invite_url("t0ken"))
    assert again.status_code == 410
    assert "already been used" in again.content.decode()


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"password2": "something-else-1"}, "The two passwords differ."),
        ({"password": "abc", "password2": "abc"}, "This password is too short."),
        ({"username": "olivia"}, "This username is taken."),
        ({"username": ""}, "This field is required."),
    ],
)
def test_the_signup_form_shows_field_errors_and_keeps_the_link(
    client, project, owner, data, error
):
    InvitationFactory(project=project, token="t0ken")
    body = {"username": "nora", "password": GOOD_PASSWORD, "password2": GOOD_PASSWORD}
    response = client.post(_invite_url("t0ken"), body | data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not User.objects.filter(username="nora").exists()
    assert Invitation.objects.get().status() == InvitationStatus.PENDING


def test_a_signed_in_user_accepts(client, project, outsider):
    InvitationFactory(project=project, token="t0ken", role=Role.ADJUDICATOR)
    login(client, outsider)
    html = client.get(_invite_url("t0ken")).content.decode()
    assert 'id="invite-accept-form"' in html and "Join as oscar" in html
    response = client.post(_invite_url("t0ken"))
    assert response.status_code == 302
    assert _role(project, outsider) == Role.ADJUDICATOR


def test_a_member_is_told_and_keeps_their_role(client, project, owner):
    InvitationFactory(project=project, token="t0ken", role=Role.VIEWER)
    login(client, owner)
    html = client.get(_invite_url("t0ken")).content.decode()
    assert 'id="invite-already-member"' in html
    refused = client.post(_invite_url("t0ken"))
    assert refused.status_code == 409
    assert "already a member of Acme RAG (owner)" in refused.content.decode()
    assert _role(project, owner) == Role.OWNER
    assert Invitation.objects.get().status() == InvitationStatus.PENDING


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"expires_at": timezone.now() - timedelta(seconds=1)}, "has expired"),
        ({"revoked_at": timezone.now()}, "withdrawn"),
        ({"accepted_at": timezone.now()}, "already been used"),
    ],
)
def test_dead_links_answer_410_for_every_method(client, project, fields, message):
    InvitationFactory(project=project, token="t0ken", **fields)
    for user in (None, UserFactory()):
        if user:
            login(client, user)
        for response in (
            client.get(_invite_url("t0ken")),
            client.post(
                _invite_url("t0ken"),
                {
                    "username": "z",
                    "password": GOOD_PASSWORD,
                    "password2": GOOD_PASSWORD,
                },
            ),
        ):
            assert response.status_code == 410
            assert message in response.content.decode()
            assert (
                "Ask an owner of <strong>Acme RAG</strong>" in response.content.decode()
            )
    assert not Membership.objects.filter(project=project).exists()


def test_a_link_that_expires_while_open_answers_410(client, project, frozen_clock):
    InvitationFactory(
        project=project, token="t0ken", expires_at=timezone.now() + timedelta(hours=1)
    )
    assert client.get(_invite_url("t0ken")).status_code == 200
    frozen_clock.shift(timedelta(hours=1))
    body = {"username": "late", "password": GOOD_PASSWORD, "password2": GOOD_PASSWORD}
    assert client.post(_invite_url("t0ken"), body).status_code == 410
    assert not User.objects.filter(username="late").exists()


@pytest.mark.parametrize("token", ["unknown", "x" * 500, "0123456789abcdef"])
def test_unknown_links_are_404(client, token):
    assert client.get(_invite_url(token)).status_code == 404
    assert client.post(_invite_url(token), {}).status_code == 404


def test_link_guessing_is_throttled_per_address(client, project, settings):
    settings.INVITE_RATE_PER_IP = "3/10m"
    InvitationFactory(project=project, token="t0ken")
    statuses = [client.get(_invite_url(f"guess{i}")).status_code for i in range(4)]
    assert statuses == [404, 404, 404, 429]
    # A valid link still opens (GETs of known links are not counted) but cannot be spent.
    assert client.get(_invite_url("t0ken")).status_code == 200
    body = {"username": "nora", "password": GOOD_PASSWORD, "password2": GOOD_PASSWORD}
    assert client.post(_invite_url("t0ken"), body).status_code == 429
    assert not User.objects.filter(username="nora").exists()
    # Another address is not affected.
    assert client.get(_invite_url("t0ken"), REMOTE_ADDR="10.9.9.9").status_code == 200


def test_the_link_page_needs_the_csrf_token(project):
    InvitationFactory(project=project, token="t0ken")
    client = Client(enforce_csrf_checks=True)
    body = {"username": "nora", "password": GOOD_PASSWORD, "password2": GOOD_PASSWORD}
    assert client.post(_invite_url("t0ken"), body).status_code == 403
    assert not User.objects.filter(username="nora").exists()


def test_the_link_page_takes_get_and_post_only(client, project):
    InvitationFactory(project=project, token="t0ken")
    assert client.put(_invite_url("t0ken")).status_code == 405


def test_a_real_invitation_link_works_end_to_end(client, project, owner):
    _, raw = invitation_create(project=project, actor=owner, role=Role.VIEWER)
    response = client.post(
        _invite_url(raw),
        {"username": "uma", "password": GOOD_PASSWORD, "password2": GOOD_PASSWORD},
    )
    assert response.status_code == 302
    assert _role(project, User.objects.get(username="uma")) == Role.VIEWER


# ------------------------------------------------------------------ access log


def test_the_access_log_pages_newest_first_and_htmx_gets_the_region(
    client, project, owner
):
    subject = UserFactory(username="sam")
    for i in range(30):
        MembershipEventFactory(
            project=project, actor=owner, subject=subject, after={"role": f"r{i}"}
        )
    MembershipEventFactory(project=ProjectFactory(), after={"role": "elsewhere"})
    login(client, owner)
    first = client.get(_settings(project)).content.decode()
    assert "r29" in first and "r5" in first and "r4" not in first
    assert first.index("r29") < first.index("r28")
    assert "elsewhere" not in first
    assert "Page 1 of 2" in first and "?page=2" in first

    second = client.get(_settings(project) + "?page=2", **HX)
    assert second.status_code == 200
    html = second.content.decode()
    assert html.lstrip().startswith('<article id="access-log"')
    assert "<html" not in html and "r4" in html and "r5" not in html
    assert "HX-Request" in second["Vary"]
    assert client.get(_settings(project) + "?page=0", **HX).status_code == 400
    assert client.get(_settings(project) + "?page=x").status_code == 400


def test_the_settings_page_queries_do_not_grow_with_people(
    client, project, owner, django_assert_max_num_queries
):
    for _ in range(15):
        user = UserFactory()
        MembershipFactory(project=project, user=user, role=Role.REVIEWER)
        InvitationFactory(project=project, created_by=owner)
        MembershipEventFactory(project=project, actor=owner, subject=user)
    login(client, owner)
    with django_assert_max_num_queries(12):
        assert client.get(_settings(project)).status_code == 200
