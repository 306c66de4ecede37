from __future__ import annotations

import pytest

from evalsite.accounts.models import Membership, Project, Role
from tests.browser.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_log_in_see_dashboard_create_project_log_out(
    page, live_server, django_user_model
):
    django_user_model.objects.create_user(username="alice", password="s3cret-pass")

    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url

    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "wrong")
    page.click("#login-form button[type=submit]")
    assert page.locator("#login-form .error").is_visible()

    page.fill("input[name=password]", "s3cret-pass")
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("text=Your projects")

    page.fill("#project-create-form input[name=name]", "Support bot evals")
    page.click("#project-create-form button[type=submit]")
    page.wait_for_selector("h1:has-text('Support bot evals')")
    assert page.locator(".flash-success").inner_text().startswith("Project")
    project = Project.objects.get(name="Support bot evals")
    assert (
        Membership.objects.get(project=project, user__username="alice").role
        == Role.OWNER
    )

    page.goto(f"{live_server.url}/")
    assert page.locator("#project-list").inner_text().count("Support bot evals") == 1

    page.click("#logout-button")
    page.wait_for_selector("#login-form")
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url


def test_owner_invites_and_a_new_visitor_joins_as_reviewer(
    page, live_server, django_user_model
):
    owner = django_user_model.objects.create_user(
        username="olga", password="s3cret-pass"
    )
    project = Project.objects.create(name="Support bot evals")
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)

    login(page, live_server, "olga", "s3cret-pass")
    page.goto(f"{live_server.url}/projects/{project.pk}/settings/")
    form = page.locator("#invitation-form")
    form.locator("select[name=role]").select_option("reviewer")
    form.locator("input[name=email]").fill("nadia@example.com")
    form.locator("input[name=days]").fill("3")
    form.locator("button[type=submit]").click()
    link = page.locator("#new-invitation-link").inner_text().strip()
    assert link.startswith(f"{live_server.url}/invite/")
    assert "nadia@example.com" in page.locator("#invitation-list").inner_text()

    page.click("#logout-button")
    page.wait_for_selector("#login-form")

    page.goto(link)
    page.wait_for_selector("h1:has-text('Join Support bot evals')")
    signup = page.locator("#invite-signup-form")
    assert signup.locator("input[name=email]").input_value() == "nadia@example.com"
    signup.locator("input[name=username]").fill("nadia")
    signup.locator("input[name=password]").fill("a-long-pass-phrase")
    signup.locator("input[name=password2]").fill("a-long-pass-phrase")
    signup.locator("button[type=submit]").click()

    page.wait_for_selector("h1:has-text('Support bot evals')")
    assert page.url.rstrip("/").endswith(f"/projects/{project.pk}")
    assert "you are reviewer here" in page.locator(".flash-success").inner_text()
    assert page.locator("hgroup .badge").inner_text() == "Reviewer"
    assert "Log out nadia" in page.locator("#logout-button").inner_text()
    nadia = django_user_model.objects.get(username="nadia")
    assert Membership.objects.get(project=project, user=nadia).role == Role.REVIEWER

    # The link is spent: opening it again says so, it does not error.
    page.goto(link)
    page.wait_for_selector("#invite-gone")
    assert "already been used" in page.locator("#invite-gone").inner_text()
