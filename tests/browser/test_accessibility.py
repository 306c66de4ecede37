"""Every page at a phone's width (390 px) and under axe-core.

The pages are every route the security walk knows (tests/security/routes.py), filled
from its world of one of every object, that answers a signed-in owner's GET with an
HTML page; plus the pages that only show their widest tables with a query (two runs
compared, a queue's card). Each must fit 390 px without the page scrolling sideways
(a wide table scrolls in its own box), and axe-core (the `page` fixture) must find no
serious or critical violation on any of them.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import login
from tests.exports.builders import build_world
from tests.security.routes import fill, pages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
# Rounding of sub-pixel layout: a page 390.5 px wide reports 391.
SLACK = 1


@pytest.fixture
def world(project, owner, reviewer, viewer):
    """One of every project-scoped object (the security walk's world)."""
    return build_world(project, owner)


def _html_pages(client, world, owner) -> list[tuple[str, str]]:
    client.force_login(owner)
    found = []
    for route in pages():
        url = fill(route.route, world)
        response = client.get(url)
        is_page = response.status_code == 200 and response["Content-Type"].startswith(
            "text/html"
        )
        if is_page and b"<html" in response.content[:400]:
            found.append((route.name, url))
    project = world["project"].pk
    a, b = world["run"].pk, world["other_run"].pk
    found.append(
        ("compare:compare (two runs)", f"/projects/{project}/compare/?a={a}&b={b}")
    )
    return found


def _overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


# The widest elements sticking out past the viewport (not counting what a scroll box
# clips), for a failure message that says where to look.
_CULPRITS = """(limit) => {
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.right <= limit || r.width === 0) continue;
    let clipped = false;
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') { clipped = true; break; }
    }
    if (clipped) continue;
    const kids = [...el.children].some(c => c.getBoundingClientRect().right > limit);
    if (kids) continue;
    const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
    out.push(name + ' → ' + Math.round(r.right) + ' px');
    if (out.length >= 4) break;
  }
  return out;
}"""


def test_every_page_fits_a_phone_without_sideways_scrolling(
    page,
    live_server,
    client,
    world,
    owner,
    axe,
):
    urls = _html_pages(client, world, owner)
    assert len(urls) >= 25, urls  # the walk found the app's pages
    page.set_viewport_size(PHONE)
    login(page, live_server, owner.username, "pw")
    too_wide = []
    for name, url in urls:
        page.goto(live_server.url + url)
        width = _overflow(page)
        if width > PHONE["width"] + SLACK:
            culprits = page.evaluate(_CULPRITS, PHONE["width"] + SLACK)
            too_wide.append(f"{name} {url}: {width} px ({'; '.join(culprits)})")
    assert not too_wide, "pages wider than 390 px:\n" + "\n".join(too_wide)
    assert axe.pages >= len(urls)  # axe ran on every one of them


def test_a_wide_table_scrolls_in_its_own_labelled_focusable_box(
    page,
    live_server,
    world,
    owner,
):
    page.set_viewport_size(PHONE)
    login(page, live_server, owner.username, "pw")
    project = world["project"].pk
    a, b = world["run"].pk, world["other_run"].pk
    page.goto(f"{live_server.url}/projects/{project}/compare/?a={a}&b={b}")
    boxes = page.locator(".table-scroll")
    assert boxes.count() >= 1
    box = boxes.first
    assert box.get_attribute("tabindex") == "0"
    assert box.get_attribute("role") == "region" and box.get_attribute("aria-label")
    assert (
        page.evaluate(
            "getComputedStyle(document.querySelector('.table-scroll')).overflowX"
        )
        == "auto"
    )


def test_the_skip_link_moves_focus_to_the_content_and_focus_is_visible(
    page, live_server, owner
):
    login(page, live_server, owner.username, "pw")
    page.keyboard.press("Tab")
    skip = page.locator("#skip-link")
    assert skip.evaluate("el => el === document.activeElement")
    assert skip.is_visible() and skip.inner_text() == "Skip to content"
    # The focus ring: an outline of at least 2 px on the focused control.
    outline = skip.evaluate("el => parseFloat(getComputedStyle(el).outlineWidth)")
    assert outline >= 2
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "content"
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "parseFloat(getComputedStyle(document.activeElement).outlineWidth)"
    )
    assert focused >= 2


def test_the_axe_audit_catches_a_serious_violation(page, live_server, owner, axe):
    """The audit every browser test runs would fail a page with an unlabelled field."""
    login(page, live_server, owner.username, "pw")
    page.evaluate(
        "document.querySelector('main').insertAdjacentHTML('beforeend', "
        '\'<input type="text" id="unlabelled">\')'
    )
    found = axe.check(again=True)
    assert any(" label (critical)" in f and "#unlabelled" in f for f in found), found
    # Planted on purpose: not this test's failure (the audit checks again at the end).
    page.evaluate("document.getElementById('unlabelled').remove()")
    axe.violations.clear()
