"""Memberships: a project never loses its last owner (service, page, API, admin), and
removing a member takes a deliberate second step."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.accounts.models import Membership, Project, Role
from evalsite.accounts.services import (
    api_token_create,
    membership_remove,
    membership_set,
)
from evalsite.core.exceptions import ApplicationError
from tests.conftest import login
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _role(project, user) -> str:
    return Membership.objects.get(project=project, user=user).role


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.VIEWER])
def test_membership_set_refuses_to_demote_the_last_owner(project, owner, role):
    with pytest.raises(ApplicationError, match="at least one owner"):
        membership_set(project=project, user=owner, role=role)
    assert _role(project, owner) == Role.OWNER


def test_membership_set_demotes_an_owner_when_another_remains(project, owner):
    second = MembershipFactory(project=project, role=Role.OWNER).user
    membership_set(project=project, user=owner, role=Role.REVIEWER)
    assert _role(project, owner) == Role.REVIEWER
    with pytest.raises(ApplicationError):
        membership_set(project=project, user=second, role=Role.VIEWER)
    assert _role(project, second) == Role.OWNER


def test_membership_set_still_adds_and_promotes(project, owner, viewer):
    membership_set(project=project, user=viewer, role=Role.OWNER)
    newcomer = UserFactory()
    membership_set(project=project, user=newcomer, role=Role.VIEWER)
    assert _role(project, viewer) == Role.OWNER
    assert _role(project, newcomer) == Role.VIEWER


def test_membership_remove_rereads_the_role_it_checks(project, owner, reviewer):
    """A stale row saying "reviewer" does not let the last owner be removed."""
    stale = Membership.objects.get(project=project, user=reviewer)
    Membership.objects.filter(project=project, user=owner).update(role=Role.REVIEWER)
    Membership.objects.filter(pk=stale.pk).update(role=Role.OWNER)
    with pytest.raises(ApplicationError):
        membership_remove(membership=stale)  # its in-memory role is still reviewer
    assert Membership.objects.filter(pk=stale.pk).exists()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite locks the whole database"
)
def test_membership_changes_lock_the_project_row(project, owner, reviewer):
    """Two owners demoting each other at once: the second waits for the first and
    then sees it is the last owner."""
    with CaptureQueriesContext(connection) as queries:
        membership_set(project=project, user=reviewer, role=Role.VIEWER)
        membership_remove(membership=Membership.objects.get(user=reviewer))
    locks = [
        q["sql"]
        for q in queries
        if q["sql"].startswith('SELECT "accounts_project"') and "FOR UPDATE" in q["sql"]
    ]
    assert len(locks) == 2


def test_the_last_owner_cannot_demote_themselves_from_the_page(client, project, owner):
    login(client, owner)
    response = client.post(
        reverse("accounts:member_set", args=[project.pk]),
        {"username": "olivia", "role": "viewer"},
        follow=True,
    )
    assert "at least one owner" in response.content.decode()
    assert _role(project, owner) == Role.OWNER


def test_the_last_owner_cannot_be_demoted_through_the_api(client, project, owner):
    _, raw = api_token_create(user=owner)
    response = client.post(
        f"/api/projects/{project.pk}/members",
        json.dumps({"username": "olivia", "role": "reviewer"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert response.status_code == 400
    body = response.json()
    assert "at least one owner" in body["detail"]
    assert body["errors"] == [
        {"field": "role", "message": "The last owner must stay owner."}
    ]
    assert _role(project, owner) == Role.OWNER


# ------------------------------------------------------------------ removal


def _remove_url(project, membership) -> str:
    return reverse("accounts:member_remove", args=[project.pk, membership.pk])


def test_removing_a_member_asks_first_without_js(client, project, owner, reviewer):
    membership = Membership.objects.get(user=reviewer)
    url = _remove_url(project, membership)
    login(client, owner)
    settings_page = client.get(reverse("accounts:settings", args=[project.pk]))
    html = settings_page.content.decode()
    assert f'href="{url}"' in html and "hx-confirm=" in html

    for response in (client.get(url), client.post(url)):
        assert response.status_code == 200
        page = response.content.decode()
        assert 'id="member-remove-confirm"' in page
        assert 'name="confirm" value="yes"' in page
    assert Membership.objects.filter(pk=membership.pk).exists()

    done = client.post(url, {"confirm": "yes"})
    assert done.status_code == 302
    assert done.url == reverse("accounts:settings", args=[project.pk])
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_removing_with_htmx_sends_the_confirmation_and_reloads(
    client, project, owner, reviewer
):
    membership = Membership.objects.get(user=reviewer)
    login(client, owner)
    response = client.post(
        _remove_url(project, membership), {"confirm": "yes"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("accounts:settings", args=[project.pk])
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_the_last_owner_is_not_removed_even_confirmed(client, project, owner):
    own = Membership.objects.get(user=owner)
    login(client, owner)
    response = client.post(_remove_url(project, own), {"confirm": "yes"}, follow=True)
    assert "at least one owner" in response.content.decode()
    assert Membership.objects.filter(pk=own.pk).exists()


def test_only_owners_reach_the_removal_step(
    client, project, owner, reviewer, viewer, outsider
):
    membership = Membership.objects.get(user=viewer)
    url = _remove_url(project, membership)
    for user, status in ((reviewer, 403), (viewer, 403), (outsider, 404)):
        login(client, user)
        assert client.get(url).status_code == status
        assert client.post(url, {"confirm": "yes"}).status_code == status
    assert Membership.objects.filter(pk=membership.pk).exists()


# ------------------------------------------------------------------ admin


def test_the_admin_cannot_demote_or_delete_the_last_owner(admin_client, project, owner):
    own = Membership.objects.get(user=owner)
    change = f"/admin/accounts/membership/{own.pk}/change/"
    response = admin_client.post(
        change, {"project": project.pk, "user": owner.pk, "role": "viewer"}
    )
    assert response.status_code == 200  # the form again, with the error
    assert "at least one owner" in response.content.decode()
    other = Project.objects.create(name="Elsewhere")
    admin_client.post(change, {"project": other.pk, "user": owner.pk, "role": "owner"})
    own.refresh_from_db()
    assert own.role == Role.OWNER and own.project_id == project.pk

    assert admin_client.get(
        f"/admin/accounts/membership/{own.pk}/delete/"
    ).status_code == (403)
    bulk = admin_client.post(
        "/admin/accounts/membership/",
        {"action": "delete_selected", "_selected_action": [own.pk], "post": "yes"},
    )
    assert bulk.status_code == 403
    assert Membership.objects.filter(pk=own.pk).exists()


def test_the_admin_project_page_keeps_an_owner(admin_client, project, owner, viewer):
    rows = list(Membership.objects.filter(project=project).order_by("pk"))
    data = {
        "name": project.name,
        "description": "",
        "default_overlap": "1",
        "memberships-TOTAL_FORMS": str(len(rows)),
        "memberships-INITIAL_FORMS": str(len(rows)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, m in enumerate(rows):
        data |= {
            f"memberships-{i}-id": str(m.pk),
            f"memberships-{i}-project": str(project.pk),
            f"memberships-{i}-user": str(m.user_id),
            f"memberships-{i}-role": "viewer",
        }
    url = f"/admin/accounts/project/{project.pk}/change/"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert "at least one owner" in response.content.decode()
    assert _role(project, owner) == Role.OWNER
    # Deleting the owner's row in the same form is refused alike.
    owner_index = next(i for i, m in enumerate(rows) if m.user_id == owner.pk)
    data[f"memberships-{owner_index}-role"] = "owner"
    data[f"memberships-{owner_index}-DELETE"] = "on"
    response = admin_client.post(url, data)
    assert "at least one owner" in response.content.decode()
    assert _role(project, owner) == Role.OWNER
    # Keeping one owner is fine.
    del data[f"memberships-{owner_index}-DELETE"]
    assert admin_client.post(url, data).status_code == 302
    assert _role(project, viewer) == Role.VIEWER


def _log(project) -> list[tuple[str, str, dict | None, dict | None]]:
    from evalsite.accounts.models import AuditEvent

    return [
        (e.action, e.subject.username, e.before, e.after)
        for e in AuditEvent.objects.filter(project=project).order_by("id")
    ]


def test_admin_membership_changes_are_in_the_access_log(
    admin_client, admin_user, project, owner, reviewer, viewer
):
    from evalsite.accounts.models import AuditEvent

    row = Membership.objects.get(user=reviewer)
    change = f"/admin/accounts/membership/{row.pk}/change/"
    data = {"project": project.pk, "user": reviewer.pk, "role": "adjudicator"}
    assert admin_client.post(change, data).status_code == 302
    other = Project.objects.create(name="Elsewhere")
    data = {"project": other.pk, "user": reviewer.pk, "role": "viewer"}
    assert admin_client.post(change, data).status_code == 302
    delete = (
        f"/admin/accounts/membership/{Membership.objects.get(user=viewer).pk}/delete/"
    )
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert _log(project) == [
        ("role_changed", "rita", {"role": "reviewer"}, {"role": "adjudicator"}),
        ("member_removed", "rita", {"role": "adjudicator"}, None),
        ("member_removed", "victor", {"role": "viewer"}, None),
    ]
    assert _log(other) == [("member_added", "rita", None, {"role": "viewer"})]
    assert set(AuditEvent.objects.values_list("actor", flat=True)) == {admin_user.pk}


def test_admin_project_page_changes_are_in_the_access_log(
    admin_client, project, owner, viewer
):
    rows = list(Membership.objects.filter(project=project).order_by("pk"))
    data = {
        "name": project.name,
        "description": "",
        "default_overlap": "1",
        "memberships-TOTAL_FORMS": str(len(rows)),
        "memberships-INITIAL_FORMS": str(len(rows)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, m in enumerate(rows):
        data |= {
            f"memberships-{i}-id": str(m.pk),
            f"memberships-{i}-project": str(project.pk),
            f"memberships-{i}-user": str(m.user_id),
            f"memberships-{i}-role": m.role if m.user_id == owner.pk else "reviewer",
        }
    url = f"/admin/accounts/project/{project.pk}/change/"
    assert admin_client.post(url, data).status_code == 302
    assert _log(project) == [
        ("role_changed", "victor", {"role": "viewer"}, {"role": "reviewer"})
    ]
    assert admin_client.post(url, data).status_code == 302  # nothing changed
    assert len(_log(project)) == 1


def test_the_access_log_cannot_be_edited_in_the_admin(admin_client, project, owner):
    from tests.factories import InvitationFactory, MembershipEventFactory

    event = MembershipEventFactory(project=project)
    invitation = InvitationFactory(project=project)
    for model, pk in (("auditevent", event.pk), ("invitation", invitation.pk)):
        assert admin_client.get(f"/admin/accounts/{model}/").status_code == 200
        assert (
            admin_client.get(f"/admin/accounts/{model}/{pk}/change/").status_code == 200
        )
        assert admin_client.get(f"/admin/accounts/{model}/add/").status_code == 403
        assert (
            admin_client.post(
                f"/admin/accounts/{model}/{pk}/delete/", {"post": "yes"}
            ).status_code
            == 403
        )


def test_the_admin_cannot_delete_a_user_who_is_the_last_owner_of_a_project(
    admin_client, project, owner, viewer
):
    # Deleting the user would take their membership with it: the project would be left
    # without an owner. The delete page names the project instead of deleting.
    page = admin_client.get(f"/admin/auth/user/{owner.pk}/delete/")
    text = page.content.decode()
    assert page.status_code == 200
    assert f"Project “{project.name}”: the user to delete is its last owner" in text
    assert "make someone else owner first" in text
    assert "permission" not in text  # not Django's "no permission to delete membership"
    admin_client.post(f"/admin/auth/user/{owner.pk}/delete/", {"post": "yes"})
    bulk = admin_client.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [owner.pk], "post": "yes"},
    )
    assert "make someone else owner first" in bulk.content.decode()
    assert User.objects.filter(pk=owner.pk).exists()
    assert _role(project, owner) == Role.OWNER
    # A user who is not the last owner goes, as does the former last owner once
    # someone else owns the project.
    response = admin_client.post(
        f"/admin/auth/user/{viewer.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not User.objects.filter(pk=viewer.pk).exists()
    MembershipFactory(project=project, user=UserFactory(), role=Role.OWNER)
    response = admin_client.post(
        f"/admin/auth/user/{owner.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not User.objects.filter(pk=owner.pk).exists()
