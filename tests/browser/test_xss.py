"""A real browser opens the pages showing hostile text; no script may run."""

from __future__ import annotations

import pytest

from tests.browser.conftest import login
from tests.exports.builders import build_world
from tests.security.routes import fill
from tests.security.test_xss import poison

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = [
    "projects/<int:project_id>/results/<int:result_id>/",
    "projects/<int:project_id>/runs/<int:run_id>/results/",
    "projects/<int:project_id>/runs/<int:pk>/",
    "projects/<int:project_id>/datasets/<int:dataset_id>/",
    "projects/<int:project_id>/queues/<int:queue_id>/",
]


def test_no_script_runs_on_pages_with_hostile_text(page, live_server, project, owner):
    world = build_world(project, owner)
    poison(world)
    login(page, live_server, owner.get_username(), "pw")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for route in PAGES:
        url = live_server.url + fill(route, world)
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        page.wait_for_load_state("networkidle")
        # The hostile text is on the page, as text...
        assert "window.__xss=1" in page.content(), url
        # ...and never ran.
        assert page.evaluate("typeof window.__xss") == "undefined", url
        # Hovering the reference cell must not fire an injected handler either.
        page.mouse.move(10, 10)
        assert page.evaluate("typeof window.__xss") == "undefined", url
    assert dialogs == []
