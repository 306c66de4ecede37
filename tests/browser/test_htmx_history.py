"""Real browser: htmx partials never leave the user on a bare fragment, and messages
added by an htmx request show at once (swapped in out of band)."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Run
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_project():
    project = ProjectFactory(name="Browser htmx")
    MembershipFactory(
        project=project, user=UserFactory(username="olga"), role=Role.OWNER
    )
    return project


def test_back_after_htmx_navigation_restores_the_whole_page(
    page, live_server, owner_project
):
    run = make_run(owner_project, n_items=3)
    login(page, live_server, "olga", "pw")
    explorer = f"{live_server.url}/projects/{owner_project.pk}/runs/{run.pk}/results/"
    page.goto(explorer)
    # No local history cache: going back asks the server (HX-History-Restore-Request).
    page.evaluate("htmx.config.historyCacheSize = 0")
    page.click("#explorer th a:has-text('Final score')")
    page.wait_for_url(lambda url: "sort=final" in url)
    page.click("#explorer th a:has-text('Updated')")
    page.wait_for_url(lambda url: "sort=updated" in url)

    with page.expect_response(
        lambda r: r.request.headers.get("hx-history-restore-request") == "true"
    ) as restore:
        page.go_back()
    response = restore.value
    assert "hx-request" in response.headers.get("vary", "").lower()
    page.wait_for_url(lambda url: "sort=final" in url)
    # The layout is still there, once: the page came back, not a bare region.
    assert page.locator("header.topbar").count() == 1
    assert page.locator("#explorer").count() == 1
    assert page.locator("#messages").count() == 1


def test_htmx_cancel_shows_its_message_at_once_and_only_once(
    page, live_server, owner_project
):
    run = make_run(owner_project, status=Run.Status.RUNNING)
    login(page, live_server, "olga", "pw")
    page.goto(f"{live_server.url}/projects/{owner_project.pk}/runs/{run.pk}/")
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-run")

    flash = page.locator("#messages .flash-success")
    flash.wait_for()
    assert "cancelled." in flash.inner_text()
    assert page.locator("header.topbar").count() == 1

    page.reload()
    assert page.locator("#messages .flash").count() == 0
