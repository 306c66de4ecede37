from __future__ import annotations

import pytest

from evalsite.accounts.models import Membership, Project, Role

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
