"""Browser tests: pytest-playwright's `page` on Debian's chromium (never a downloaded one).

Every page a browser test visits is checked with axe-core (axe-playwright-python, which
bundles axe.min.js: no network): after each `page.goto` and `page.wait_for_url`, and
once more at the end of the test on whatever the page shows then. A serious or
critical violation fails the test, listing each one (rule, page, elements).

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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe

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


# What fails a test: axe's two worst impact levels (moderate and minor are reported
# by `make lint`-style reviews, not here).
AXE_FAILING_IMPACTS = ("serious", "critical")
_AXE = Axe()


class AxeAudit:
    """axe-core on each page a test visits; the serious and critical violations."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.checked: set[str] = set()
        self.violations: list[str] = []
        self.pages = 0

    def check(self, *, again: bool = False) -> list[str]:
        """Run axe on the page as it is now (once per URL unless `again`); returns
        this page's failing violations, also kept for the end of the test."""
        url = self.page.url
        if not url.startswith("http") or (url in self.checked and not again):
            return []
        self.checked.add(url)
        # The page may still be settling (an htmx swap, a redirect): wait for it.
        with contextlib.suppress(Exception):
            self.page.wait_for_load_state("load")
        try:
            # An htmx fragment opened on its own (the security and CSP walks visit
            # every URL) is not a page: it has no doctype, title or language because
            # it is swapped into a page that has them, and that page is checked.
            if not self.page.evaluate("document.doctype !== null"):
                return []
            results = _AXE.run(self.page)
        except Exception as exc:  # noqa: BLE001 - a navigation raced the check: the next one sees the page
            if "context was destroyed" in str(exc) or "navigat" in str(exc):
                return []
            raise
        self.pages += 1
        found = [
            _describe(urlsplit(url).path, v)
            for v in results.response["violations"]
            if v.get("impact") in AXE_FAILING_IMPACTS
        ]
        self.violations.extend(f for f in found if f not in self.violations)
        return found


def _describe(path: str, violation: dict[str, Any]) -> str:
    targets = [", ".join(map(str, n.get("target", []))) for n in violation["nodes"]]
    shown = "; ".join(targets[:5]) + (
        f" (+{len(targets) - 5} more)" if len(targets) > 5 else ""
    )
    return (
        f"{path}: {violation['id']} ({violation['impact']}): {violation['help']} "
        f"at {shown}"
    )


def _after(method: Callable[..., Any], audit: AxeAudit) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        outcome = method(*args, **kwargs)
        audit.check()
        return outcome

    return wrapped


@pytest.fixture
def axe(page: Any) -> AxeAudit:
    """The page's axe audit (`axe.check(again=True)` to re-check a changed page)."""
    return page._axe_audit  # type: ignore[no-any-return]


@pytest.fixture
def page(page: Any) -> Iterator[Any]:
    """pytest-playwright's page, audited by axe-core on every page it visits: the
    test fails at its end on any serious or critical violation."""
    audit = AxeAudit(page)
    page._axe_audit = audit
    page.goto = _after(page.goto, audit)
    page.wait_for_url = _after(page.wait_for_url, audit)
    yield page
    with contextlib.suppress(Exception):
        if not page.is_closed():
            audit.check(again=True)
    if audit.violations:
        pytest.fail(
            f"axe-core found {len(audit.violations)} serious or critical "
            "accessibility violation(s):\n  " + "\n  ".join(audit.violations),
            pytrace=False,
        )
