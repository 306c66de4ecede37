from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from evalsite.accounts.models import ApiToken, Membership, Project, Role, hash_token
from tests.conftest import login

pytestmark = pytest.mark.django_db


def test_dashboard_requires_login(client):
    response = client.get(reverse("accounts:dashboard"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("accounts:login"))


def test_login_with_bad_password_shows_form_error(client, owner):
    response = client.post(
        reverse("accounts:login"), {"username": "olivia", "password": "wrong"}
    )
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_login_is_rate_limited_until_the_window_ends(client, owner, frozen_clock):
    # On a frozen clock the throttle's window cannot roll over mid-test.
    for _ in range(10):
        client.post(
            reverse("accounts:login"), {"username": "olivia", "password": "wrong"}
        )
    response = client.post(
        reverse("accounts:login"), {"username": "olivia", "password": "pw"}
    )
    assert response.status_code == 429
    assert "Too many login attempts" in response.content.decode()
    # LOGIN_RATE_PER_ACCOUNT is 10/15m: in the next window the right password works.
    frozen_clock.shift(timedelta(minutes=15))
    response = client.post(
        reverse("accounts:login"), {"username": "olivia", "password": "pw"}
    )
    assert response.status_code == 302


def test_dashboard_lists_only_my_projects(client, owner, outsider, project):
    login(client, owner)
    body = client.get(reverse("accounts:dashboard")).content.decode()
    assert project.name in body
    other = Project.objects.exclude(pk=project.pk).get()
    assert other.name not in body


def test_project_create_makes_me_owner(client, outsider):
    login(client, outsider)
    response = client.post(reverse("accounts:project_create"), {"name": "New one"})
    project = Project.objects.get(name="New one")
    assert response.status_code == 302
    assert Membership.objects.get(project=project, user=outsider).role == Role.OWNER


def test_project_create_rejects_blank_name(client, outsider):
    login(client, outsider)
    response = client.post(reverse("accounts:project_create"), {"name": "  "})
    assert response.status_code == 400
    assert not Project.objects.filter(name="").exists()


def test_project_pages_are_404_for_outsiders(client, outsider, project):
    login(client, outsider)
    for name in ["accounts:project", "accounts:settings"]:
        assert client.get(reverse(name, args=[project.pk])).status_code == 404
    assert (
        client.post(
            reverse("accounts:member_set", args=[project.pk]),
            {"username": "oscar", "role": "owner"},
        ).status_code
        == 404
    )
    assert not Membership.objects.filter(project=project, user=outsider).exists()


def test_viewer_cannot_change_settings_or_members(client, viewer, project):
    login(client, viewer)
    response = client.post(
        reverse("accounts:settings", args=[project.pk]), {"name": "Hacked"}
    )
    assert response.status_code == 403
    response = client.post(
        reverse("accounts:member_set", args=[project.pk]),
        {"username": "victor", "role": "owner"},
    )
    assert response.status_code == 403
    project.refresh_from_db()
    assert project.name == "Acme RAG"
    assert Membership.objects.get(project=project, user=viewer).role == Role.VIEWER


def test_owner_adds_member_and_last_owner_cannot_be_removed(
    client, owner, viewer, project
):
    login(client, owner)
    client.post(
        reverse("accounts:member_set", args=[project.pk]),
        {"username": "victor", "role": "reviewer"},
    )
    assert Membership.objects.get(project=project, user=viewer).role == Role.REVIEWER
    own = Membership.objects.get(project=project, user=owner)
    client.post(reverse("accounts:member_remove", args=[project.pk, own.pk]))
    assert Membership.objects.filter(pk=own.pk).exists()


def test_api_token_is_shown_once_and_stored_hashed(client, owner):
    login(client, owner)
    response = client.post(reverse("accounts:tokens"), {"name": "ci"})
    body = response.content.decode()
    token = ApiToken.objects.get(user=owner)
    raw = body.split('id="new-token"')[1].split("<code>")[1].split("</code>")[0]
    assert token.token_hash == hash_token(raw)
    assert raw not in client.get(reverse("accounts:tokens")).content.decode()


def test_missing_page_is_a_proper_404(client, owner):
    login(client, owner)
    response = client.get("/no/such/page/")
    assert response.status_code == 404


def test_htmx_requests_carry_csrf_header(client, owner):
    login(client, owner)
    body = client.get(reverse("accounts:dashboard")).content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in body
    assert "/static/django_htmx/htmx-2" in body


def test_project_overview_lists_recent_runs_and_counts(client, owner, project):
    from evalsite.evals.models import JudgeConnection

    login(client, owner)
    body = client.get(reverse("accounts:project", args=[project.pk])).content.decode()
    assert "No runs yet" in body
    assert "0 datasets" in body
    judges = JudgeConnection.objects.filter(project=project).count()
    assert f"on {judges} judge connection" in body


# ------------------------------------------------------------------ who creates projects


def test_anyone_signed_in_creates_projects_by_default(client, outsider):
    body = login(client, outsider).get(reverse("accounts:dashboard")).content.decode()
    assert 'id="project-create-form"' in body


def test_project_creation_can_be_restricted_to_staff(
    client, outsider, bearer, settings, django_user_model
):
    settings.PROJECT_CREATE_STAFF_ONLY = True
    before = Project.objects.count()
    login(client, outsider)
    body = client.get(reverse("accounts:dashboard")).content.decode()
    assert 'id="project-create-form"' not in body

    page = client.post(reverse("accounts:project_create"), {"name": "Mine"})
    assert page.status_code == 403
    assert "Only staff can create projects" in page.content.decode()

    api = client.post(
        "/api/projects",
        {"name": "Mine"},
        content_type="application/json",
        **bearer(outsider),
    )
    assert api.status_code == 403
    assert api.json()["detail"].startswith("Only staff can create projects")
    assert Project.objects.count() == before

    staff = django_user_model.objects.create_user(
        username="sam", password="pw", is_staff=True
    )
    login(client, staff)
    body = client.get(reverse("accounts:dashboard")).content.decode()
    assert 'id="project-create-form"' in body
    assert (
        client.post(reverse("accounts:project_create"), {"name": "A"}).status_code
        == 302
    )
    api = client.post(
        "/api/projects",
        {"name": "B"},
        content_type="application/json",
        **bearer(staff),
    )
    assert api.status_code == 201
    assert Project.objects.count() == before + 2


# ------------------------------------------------------------------ reviewer permissions


def test_owner_toggles_what_reviewers_may_do(client, project, owner, reviewer):
    url = reverse("accounts:settings", args=[project.pk])
    login(client, owner)
    body = client.get(url).content.decode()
    assert 'name="reviewers_can_start_runs"' in body
    assert 'name="reviewers_can_save_rescore"' in body
    response = client.post(
        url,
        {
            "name": project.name,
            "reviewers_can_start_runs": "on",
            "reviewers_can_save_rescore": "on",
        },
    )
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.reviewers_can_start_runs and project.reviewers_can_save_rescore
    checked = client.get(url).content.decode()
    assert checked.count("checked") == 2

    client.post(url, {"name": project.name})  # unchecked boxes turn them off
    project.refresh_from_db()
    assert not project.reviewers_can_start_runs
    assert not project.reviewers_can_save_rescore

    login(client, reviewer)
    forged = client.post(url, {"name": project.name, "reviewers_can_start_runs": "on"})
    assert forged.status_code == 403
    project.refresh_from_db()
    assert not project.reviewers_can_start_runs


def test_reviewer_permissions_are_off_for_new_projects(client, outsider):
    login(client, outsider)
    client.post(reverse("accounts:project_create"), {"name": "Fresh"})
    project = Project.objects.get(name="Fresh")
    assert not project.reviewers_can_start_runs
    assert not project.reviewers_can_save_rescore
