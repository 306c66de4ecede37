"""Every page under the Content-Security-Policy in a real browser: no violation, and the
htmx interactions (partial swaps, hx-confirm, the handlers moved to static files) work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalsite.accounts.models import Membership, Role
from evalsite.accounts.services import invitation_create
from evalsite.evals.models import Comment, ScorerConfig
from tests.browser.conftest import login
from tests.exports.builders import build_world
from tests.security.routes import fill, pages

PROMPTFOO_RESULTS = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "imports"
    / "promptfoo_results.json"
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Not pages a browser shows: downloads, htmx-only fragments, and a session-bound token.
SKIP = {
    "datasets:map",
    "imports:preview",  # visited below with a token of a real upload
    "evals:run_progress",
    "evals:run_summary",
    "exports:run_csv",
    "exports:run_jsonl",
    "exports:dataset_csv",
    "exports:dataset_jsonl",
}

# Recorded by the page itself: Playwright's init script is not subject to the policy.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _watch(page: Any) -> list[str]:
    problems: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on(
        "console",
        lambda msg: (
            problems.append(msg.text)
            if "Content Security Policy" in msg.text or "Refused to" in msg.text
            else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    return problems


def _visit(page: Any, url: str, problems: list[str]) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    assert "script-src 'self'" in response.headers["content-security-policy"], url
    page.wait_for_load_state("networkidle")
    recorded = page.evaluate("window.__csp || []")
    assert recorded == [], (url, recorded)
    assert problems == [], (url, problems)


def test_every_page_loads_under_the_policy_without_a_violation(
    page, live_server, project, owner
):
    world = build_world(project, owner)
    owner.is_staff = owner.is_superuser = True
    owner.save()
    problems = _watch(page)
    login(page, live_server, owner.get_username(), "pw")
    urls = ["/", "/account/tokens/", "/api/docs", "/admin/", "/admin/accounts/project/"]
    urls += [fill(p.route, world) for p in pages() if p.name not in SKIP]
    # The invitation page with a link that works (the walk's made-up token is a 404).
    _, token = invitation_create(project=project, actor=owner, role=Role.REVIEWER)
    urls = [u.replace("/invite/0123456789abcdef/", f"/invite/{token}/") for u in urls]
    visited = 0
    for url in urls:
        response = page.request.get(live_server.url + url)
        if response.status == 405 or "text/html" not in response.headers.get(
            "content-type", ""
        ):
            continue  # a write-only endpoint
        _visit(page, live_server.url + url, problems)
        visited += 1
    assert visited >= 20
    # The import preview, from a real upload of promptfoo's results.
    page.goto(f"{live_server.url}/projects/{project.pk}/datasets/import/")
    page.set_input_files("#import-form input[type=file]", str(PROMPTFOO_RESULTS))
    page.click("#import-button")
    page.wait_for_url("**/datasets/import/*/")
    _visit(page, page.url, problems)
    # htmx is there, configured to inject no <style> of its own.
    assert page.evaluate("typeof htmx") == "object"
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    assert page.evaluate("htmx.config.includeIndicatorStyles") is False
    assert page.evaluate("document.querySelectorAll('style').length") == 0


def test_htmx_swaps_confirms_and_moved_handlers_work_under_the_policy(
    page, live_server, project, owner, reviewer
):
    world = build_world(project, owner)
    problems = _watch(page)
    login(page, live_server, owner.get_username(), "pw")
    base = f"{live_server.url}/projects/{project.pk}"
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))

    # A partial swap: the rescore preview replaces only its region.
    page.goto(f"{base}/runs/{world['run'].pk}/rescore/")
    url = page.url
    with page.expect_request(
        lambda r: r.method == "POST" and r.headers.get("hx-request") == "true"
    ):
        page.click("#rescore-form button[value=preview]")
    page.wait_for_selector("#rescore-result h3:has-text('Preview (nothing saved)')")
    assert page.url == url

    # hx-confirm, then htmx sends confirm=yes: saved.
    versions = ScorerConfig.objects.count()
    page.click("#rescore-save")
    page.wait_for_function(
        # A function, not a string: the page polls a string with eval, which the CSP refuses.
        "() => document.querySelector('#rescore-result h3').innerText.startsWith('Saved:')"
    )
    assert dialogs and "Save as a new scorer version?" in dialogs[-1]
    assert ScorerConfig.objects.count() == versions + 1

    # The comment form's reset, once an inline hx-on handler, now in evalsite.js.
    page.goto(f"{base}/results/{world['result'].pk}/")
    box = page.locator(f"#comment-form-{world['result'].pk} textarea[name=body]")
    box.fill("checked under the CSP")
    page.click(f"#comment-form-{world['result'].pk} button[type=submit]")
    page.wait_for_selector("text=checked under the CSP")
    page.wait_for_function(
        f"() => document.querySelector('#comment-form-{world['result'].pk} textarea').value === ''"
    )
    assert Comment.objects.filter(body="checked under the CSP").exists()

    # Member removal: the browser asks, then the page reloads without the member.
    membership = Membership.objects.get(project=project, user=reviewer)
    page.goto(f"{base}/settings/")
    page.click(f"a.member-remove[href$='/members/{membership.pk}/remove/']")
    page.wait_for_selector(".flash-success:has-text('Removed')")
    assert "Remove rita from" in dialogs[-1]
    assert not Membership.objects.filter(pk=membership.pk).exists()

    recorded = page.evaluate("window.__csp || []")
    assert recorded == [] and problems == [], (recorded, problems)
