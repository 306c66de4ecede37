"""People API: members and roles, invitations and the access log; owner-only writes,
members-only reads, another project's ids 404, one error shape."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
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
from tests.factories import (
    InvitationFactory,
    MembershipEventFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _call(client, method, path, headers, body=None):
    kwargs = dict(headers)
    if body is not None:
        kwargs.update(data=json.dumps(body), content_type="application/json")
    return client.generic(method, "/api" + path, **kwargs)


def _role(project, user):
    return (
        Membership.objects.filter(project=project, user=user)
        .values_list("role", flat=True)
        .first()
    )


def _assert_error(response, status):
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"detail", "errors"} and body["detail"]
    return body


# ------------------------------------------------------------------ members


def test_members_list_for_every_member(
    client, project, owner, reviewer, viewer, bearer
):
    response = _call(client, "GET", f"/projects/{project.pk}/members", bearer(viewer))
    assert response.status_code == 200
    rows = response.json()["items"]
    assert [(r["username"], r["role"]) for r in rows] == [
        ("olivia", "owner"),
        ("rita", "reviewer"),
        ("victor", "viewer"),
    ]


def test_owner_changes_a_role_through_the_api(client, project, owner, reviewer, bearer):
    membership = Membership.objects.get(user=reviewer)
    path = f"/projects/{project.pk}/members/{membership.pk}"
    response = _call(client, "PATCH", path, bearer(owner), {"role": "adjudicator"})
    assert response.status_code == 200
    assert response.json() == {
        "id": membership.pk,
        "username": "rita",
        "role": "adjudicator",
    }
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.subject) == (
        "role_changed",
        owner,
        reviewer,
    )


def test_the_api_keeps_the_last_owner(client, project, owner, bearer):
    own = Membership.objects.get(user=owner)
    path = f"/projects/{project.pk}/members/{own.pk}"
    body = _assert_error(
        _call(client, "PATCH", path, bearer(owner), {"role": "viewer"}), 400
    )
    assert body["errors"] == [
        {"field": "role", "message": "The last owner must stay owner."}
    ]
    _assert_error(_call(client, "DELETE", path, bearer(owner)), 400)
    assert _role(project, owner) == Role.OWNER
    assert not AuditEvent.objects.exists()


def test_unknown_roles_are_refused(client, project, owner, reviewer, bearer):
    membership = Membership.objects.get(user=reviewer)
    path = f"/projects/{project.pk}/members/{membership.pk}"
    _assert_error(_call(client, "PATCH", path, bearer(owner), {"role": "root"}), 422)
    _assert_error(
        _call(client, "PATCH", path, bearer(owner), {"role": "viewer", "x": 1}), 422
    )
    assert _role(project, reviewer) == Role.REVIEWER


def test_owner_removes_a_member(client, project, owner, reviewer, bearer):
    membership = Membership.objects.get(user=reviewer)
    path = f"/projects/{project.pk}/members/{membership.pk}"
    response = _call(client, "DELETE", path, bearer(owner))
    assert response.status_code == 204
    assert _role(project, reviewer) is None
    assert AuditEvent.objects.get().action == "member_removed"
    _assert_error(_call(client, "DELETE", path, bearer(owner)), 404)


def test_member_writes_are_owner_only_and_project_scoped(
    client, project, owner, reviewer, outsider, bearer
):
    membership = Membership.objects.get(user=reviewer)
    path = f"/projects/{project.pk}/members/{membership.pk}"
    _assert_error(
        _call(client, "PATCH", path, bearer(reviewer), {"role": "owner"}), 403
    )
    _assert_error(_call(client, "DELETE", path, bearer(reviewer)), 403)
    _assert_error(
        _call(client, "PATCH", path, bearer(outsider), {"role": "owner"}), 404
    )
    # Our membership's id under the outsider's own project: 404, not a change.
    theirs = outsider.memberships.get().project_id
    other_path = f"/projects/{theirs}/members/{membership.pk}"
    _assert_error(
        _call(client, "PATCH", other_path, bearer(outsider), {"role": "viewer"}), 404
    )
    _assert_error(_call(client, "DELETE", other_path, bearer(outsider)), 404)
    _assert_error(_call(client, "DELETE", path, {}), 401)
    assert _role(project, reviewer) == Role.REVIEWER
    assert not AuditEvent.objects.filter(project=project).exists()


def test_adding_by_username_invites_and_answers_alike_for_unknown_names(
    client, project, owner, bearer
):
    walt = UserFactory(username="walt")
    path = f"/projects/{project.pk}/members"
    answers = {}
    for username in ("walt", "ghost"):
        body = {"username": username, "role": "adjudicator"}
        response = _call(client, "POST", path, bearer(owner), body)
        answers[username] = (
            response.status_code,
            response.json()["detail"].replace(username, "NAME"),
        )
    assert answers["walt"] == answers["ghost"]
    assert answers["walt"][0] == 202
    assert not Membership.objects.filter(project=project, user=walt).exists()
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.subject) == ("invited", owner, walt)
    assert Invitation.objects.get().role == "adjudicator"
    # Asking again renews the one invitation.
    body = {"username": "walt", "role": "viewer"}
    assert _call(client, "POST", path, bearer(owner), body).status_code == 202
    assert list(Invitation.objects.values_list("role", flat=True)) == ["viewer"]


def test_an_invitee_lists_accepts_or_declines_through_the_api(
    client, project, owner, outsider, bearer
):
    walt = UserFactory(username="walt")
    path = f"/projects/{project.pk}/members"
    body = {"username": "walt", "role": "reviewer"}
    assert _call(client, "POST", path, bearer(owner), body).status_code == 202
    mine = _call(client, "GET", "/invitations", bearer(walt)).json()["items"]
    assert [(i["role"], i["invitee"], i["status"]) for i in mine] == [
        ("reviewer", "walt", "pending")
    ]
    assert _call(client, "GET", "/invitations", bearer(outsider)).json()["count"] == 0
    accept = f"/invitations/{mine[0]['id']}/accept"
    _assert_error(_call(client, "POST", accept, bearer(outsider)), 404)
    _assert_error(_call(client, "POST", accept, bearer(owner)), 404)
    joined = _call(client, "POST", accept, bearer(walt))
    assert joined.status_code == 200 and joined.json()["role"] == "reviewer"
    assert _role(project, walt) == "reviewer"
    _assert_error(_call(client, "POST", accept, bearer(walt)), 410)
    # Declining: the invitation is revoked and nobody joins.
    zoe = UserFactory(username="zoe")
    body = {"username": "zoe", "role": "viewer"}
    assert _call(client, "POST", path, bearer(owner), body).status_code == 202
    invitation = Invitation.objects.get(invitee=zoe)
    decline = f"/invitations/{invitation.pk}/decline"
    assert _call(client, "POST", decline, bearer(zoe)).status_code == 204
    invitation.refresh_from_db()
    assert invitation.status() == InvitationStatus.REVOKED
    assert _role(project, zoe) is None


def test_changing_a_members_role_by_username_answers_with_the_member(
    client, project, owner, reviewer, bearer
):
    body = {"username": "rita", "role": "adjudicator"}
    response = _call(
        client, "POST", f"/projects/{project.pk}/members", bearer(owner), body
    )
    assert response.status_code == 200 and response.json()["role"] == "adjudicator"


# ------------------------------------------------------------------ invitations


def test_owner_creates_an_invitation_and_gets_the_link_once(
    client, project, owner, bearer, frozen_clock
):
    body = {"role": "reviewer", "email": "amy@example.com", "days": 3}
    response = _call(
        client, "POST", f"/projects/{project.pk}/invitations", bearer(owner), body
    )
    assert response.status_code == 201, response.content
    data = response.json()
    invitation = Invitation.objects.get()
    shown = data["invitation"]
    assert shown["id"] == invitation.pk and shown["status"] == "pending"
    assert shown["role"] == "reviewer" and shown["email"] == "amy@example.com"
    assert shown["created_by"] == "olivia" and shown["accepted_by"] is None
    assert invitation.token_hash == hash_token(data["token"])
    assert data["url"] == f"http://testserver/invite/{data['token']}/"
    assert invitation.expires_at == timezone.now() + timedelta(days=3)

    listed = _call(client, "GET", f"/projects/{project.pk}/invitations", bearer(owner))
    assert listed.status_code == 200
    [row] = listed.json()["items"]
    assert (
        "token" not in row
        and "url" not in row
        and data["token"] not in listed.content.decode()
    )
    assert AuditEvent.objects.get().action == "invited"


@pytest.mark.parametrize(
    "body",
    [
        {"role": "reviewer", "days": 31},
        {"role": "reviewer", "days": 0},
        {"role": "boss"},
        {"role": "reviewer", "email": "x" * 255},
        {"role": "reviewer", "project_id": 99},  # no field names another project
    ],
)
def test_invitation_input_is_bounded(client, project, owner, bearer, body):
    response = _call(
        client, "POST", f"/projects/{project.pk}/invitations", bearer(owner), body
    )
    _assert_error(response, 422)
    assert not Invitation.objects.exists()


def test_a_bad_invitation_email_is_a_field_error(client, project, owner, bearer):
    body = {"role": "reviewer", "email": "not-an-email"}
    response = _call(
        client, "POST", f"/projects/{project.pk}/invitations", bearer(owner), body
    )
    errors = _assert_error(response, 400)["errors"]
    assert [e["field"] for e in errors] == ["email"]


def test_invitations_list_filters_by_status(client, project, owner, viewer, bearer):
    now = timezone.now()
    pending = InvitationFactory(project=project)
    InvitationFactory(project=project, revoked_at=now)
    InvitationFactory(project=project, accepted_at=now)
    InvitationFactory(project=project, expires_at=now - timedelta(minutes=1))
    InvitationFactory(project=ProjectFactory())
    path = f"/projects/{project.pk}/invitations"
    everything = _call(client, "GET", path, bearer(owner)).json()["items"]
    assert sorted(r["status"] for r in everything) == [
        "accepted",
        "expired",
        "pending",
        "revoked",
    ]
    for status in InvitationStatus:
        rows = _call(client, "GET", f"{path}?status={status}", bearer(owner)).json()
        assert [r["status"] for r in rows["items"]] == [status.value]
    only = _call(client, "GET", f"{path}?status=pending", bearer(owner)).json()["items"]
    assert only[0]["id"] == pending.pk
    _assert_error(_call(client, "GET", f"{path}?status=nope", bearer(owner)), 400)


def test_owner_revokes_an_invitation(client, project, owner, outsider, bearer):
    invitation = InvitationFactory(project=project)
    path = f"/projects/{project.pk}/invitations/{invitation.pk}/revoke"
    response = _call(client, "POST", path, bearer(owner))
    assert response.status_code == 200 and response.json()["status"] == "revoked"
    again = _call(client, "POST", path, bearer(owner))
    assert again.status_code == 200
    assert AuditEvent.objects.filter(action="invitation_revoked").count() == 1
    used = InvitationFactory(
        project=project, accepted_at=timezone.now(), accepted_by=outsider
    )
    used_path = f"/projects/{project.pk}/invitations/{used.pk}/revoke"
    _assert_error(_call(client, "POST", used_path, bearer(owner)), 409)


def test_invitation_writes_are_owner_only_and_project_scoped(
    client, project, owner, reviewer, outsider, bearer
):
    invitation = InvitationFactory(project=project)
    create = f"/projects/{project.pk}/invitations"
    revoke = f"/projects/{project.pk}/invitations/{invitation.pk}/revoke"
    body = {"role": "owner"}
    _assert_error(_call(client, "POST", create, bearer(reviewer), body), 403)
    _assert_error(_call(client, "POST", revoke, bearer(reviewer)), 403)
    _assert_error(_call(client, "POST", create, bearer(outsider), body), 404)
    _assert_error(_call(client, "GET", create, bearer(outsider)), 404)
    theirs = outsider.memberships.get().project_id
    other = f"/projects/{theirs}/invitations/{invitation.pk}/revoke"
    _assert_error(_call(client, "POST", other, bearer(outsider)), 404)
    assert Invitation.objects.count() == 1
    assert Invitation.objects.get().status() == InvitationStatus.PENDING


def test_invitations_list_is_owner_only(
    client, project, owner, reviewer, viewer, bearer
):
    """Invitations name their invitees' emails: reading them is an owner's business,
    like creating and revoking them."""
    invitation_create(
        project=project, actor=owner, role="viewer", email="secret@example.com"
    )
    path = f"/projects/{project.pk}/invitations"
    for user in (reviewer, viewer):
        response = _call(client, "GET", path, bearer(user))
        _assert_error(response, 403)
        assert b"secret@example.com" not in response.content
    rows = _call(client, "GET", path, bearer(owner)).json()["items"]
    assert [r["email"] for r in rows] == ["secret@example.com"]


# ------------------------------------------------------------------ access log


def test_membership_events_show_emails_to_owners_only(
    client, project, owner, reviewer, viewer, bearer
):
    invitation, _ = invitation_create(
        project=project, actor=owner, role="viewer", email="secret@example.com"
    )
    invitation_revoke(invitation=invitation, actor=owner)
    path = f"/projects/{project.pk}/membership-events"
    for user in (reviewer, viewer):
        response = _call(client, "GET", path, bearer(user))
        assert response.status_code == 200
        assert b"secret@example.com" not in response.content
        items = response.json()["items"]
        assert [e["action"] for e in items] == ["invitation_revoked", "invited"]
        assert items[1]["after"]["invitation"] == invitation.pk
    items = _call(client, "GET", path, bearer(owner)).json()["items"]
    assert items[0]["before"]["email"] == items[1]["after"]["email"]
    assert items[1]["after"]["email"] == "secret@example.com"


def test_membership_events_newest_first_members_only(
    client, project, owner, viewer, outsider, bearer
):
    subject = UserFactory(username="sam")
    for role in ("viewer", "reviewer", "adjudicator"):
        MembershipEventFactory(
            project=project, actor=owner, subject=subject, after={"role": role}
        )
    MembershipEventFactory(project=ProjectFactory(), after={"role": "elsewhere"})
    path = f"/projects/{project.pk}/membership-events"
    response = _call(client, "GET", f"{path}?limit=2", bearer(viewer))
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [e["after"]["role"] for e in body["items"]] == ["adjudicator", "reviewer"]
    first = body["items"][0]
    assert (first["action"], first["actor"], first["subject"]) == (
        "member_added",
        "olivia",
        "sam",
    )
    assert first["before"] is None
    _assert_error(_call(client, "GET", path, bearer(outsider)), 404)
    _assert_error(_call(client, "GET", path, {}), 401)


def test_the_api_writes_show_up_in_the_access_log(
    client, project, owner, reviewer, bearer
):
    headers = bearer(owner)
    membership = Membership.objects.get(user=reviewer)
    _call(
        client,
        "PATCH",
        f"/projects/{project.pk}/members/{membership.pk}",
        headers,
        {"role": "viewer"},
    )
    created = _call(
        client,
        "POST",
        f"/projects/{project.pk}/invitations",
        headers,
        {"role": "viewer"},
    ).json()["invitation"]
    _call(
        client,
        "POST",
        f"/projects/{project.pk}/invitations/{created['id']}/revoke",
        headers,
    )
    _call(client, "DELETE", f"/projects/{project.pk}/members/{membership.pk}", headers)
    events = _call(
        client, "GET", f"/projects/{project.pk}/membership-events", headers
    ).json()
    assert [e["action"] for e in events["items"]] == [
        "member_removed",
        "invitation_revoked",
        "invited",
        "role_changed",
    ]
