"""Shared Playwright fixtures (imported by tests/conftest.py): one headless Chromium per session, a fresh page per test.

Playwright's sync API runs an event loop in the test thread, so Django's async-safety
check must be relaxed for the ORM calls tests make around it.
On failure the page is saved as tests/artifacts/<test name>.png for debugging.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

# What tests/conftest.py star-imports: the fixtures and the hook, not the `login` helper,
# which would shadow conftest's login(client, user).
__all__ = [
    "browser",
    "browser_page",
    "logged_in_page",
    "page",
]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TIMEOUT_MS = 10_000


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        try:
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        except Exception as exc:  # noqa: BLE001 - a failed screenshot must not hide the test failure
            print(f"could not save screenshot: {exc}")
    context.close()


# The contract in /tmp/contracts/app.md names the page fixture `browser_page`.
browser_page = page


def login(page: Any, live_server: Any, username: str, password: str) -> Any:
    """Log in through the real login form and wait for the dashboard."""
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    return page


@pytest.fixture
def logged_in_page(page: Any, live_server: Any) -> Callable[..., Any]:
    """`logged_in_page(user, password="pw")` -> the page, logged in as that user."""

    def _login(user: Any, password: str = "pw") -> Any:
        return login(page, live_server, user.get_username(), password)

    return _login
