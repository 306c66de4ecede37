"""Browser tests: pytest-playwright's `page` on Debian's chromium (never a downloaded one).

On failure pytest-playwright saves a screenshot under tests/artifacts/<test>/
(`--screenshot=only-on-failure --output=tests/artifacts` in pyproject's addopts).

Playwright's sync API keeps an event loop running in the test thread from the first
browser test on, and Django refuses ORM calls while a loop runs (its async-safety
check). So the check is relaxed around each browser test only, and the browser tests
run after every other test: no other test runs beside that loop with the check off.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
]
TIMEOUT_MS = 10_000
HERE = Path(__file__).resolve().parent
MISSING_CHROMIUM = (
    f"{CHROMIUM} is missing: `make browser` installs Debian's chromium "
    "(the browser tests never download one)"
)


def _is_browser_test(item: pytest.Item) -> bool:
    return HERE in item.path.parents


@pytest.hookimpl(
    trylast=True
)  # after pytest-django has put its database tests in order
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Called with every collected test, not only this folder's.
    chromium = Path(CHROMIUM).exists()
    items.sort(key=_is_browser_test)  # stable: browser tests last, in their order
    for item in items:
        if _is_browser_test(item) and not chromium:
            item.add_marker(pytest.mark.skip(reason=MISSING_CHROMIUM))


@contextlib.contextmanager
def _async_unsafe_allowed() -> Iterator[None]:
    """DJANGO_ALLOW_ASYNC_UNSAFE for one phase (setup, call, teardown) of a browser test:
    the hooks below are this folder's, so they wrap its tests only."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        if before is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _async_unsafe_allowed():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _async_unsafe_allowed():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with _async_unsafe_allowed():
        return (yield)


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any],
) -> dict[str, Any]:
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}}


@pytest.fixture
def context(context: Any) -> Any:
    context.set_default_timeout(TIMEOUT_MS)
    return context


def login(page: Any, live_server: Any, username: str, password: str) -> Any:
    """Log in through the real login form and wait for the dashboard."""
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    return page
