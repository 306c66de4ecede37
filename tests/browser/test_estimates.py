"""Real browser: a lead draws a 50-item active calibration sample, two reviewers work
it, and the run page's corrected pass rate appears with its interval and narrows."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import Role
from evalsite.review.models import QueueEntry, ReviewQueue
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.estimates.builders import biased_run, human_truth

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup():
    project = ProjectFactory(name="Browser estimates")
    for name, role in (
        ("olivia", Role.OWNER),
        ("rita", Role.REVIEWER),
        ("bea", Role.REVIEWER),
    ):
        MembershipFactory(project=project, user=UserFactory(username=name), role=role)
    run = biased_run(project, n_items=200)
    return project, run


def _as(page, live_server, username):
    """A page of its own browser context (own cookies) logged in as `username`."""
    context = page.context.browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    other = context.new_page()
    login(other, live_server, username, "pw")
    return other


def _answer(page, live_server, queue, positions):
    """Answer the entries at `positions` with the keyboard, as the humans would."""
    base = f"{live_server.url}/projects/{queue.project_id}/queues/{queue.pk}/"
    for position in positions:
        result = QueueEntry.objects.get(queue=queue, position=position).result
        page.goto(f"{base}?pos={position}")
        page.wait_for_selector(f"text=Result {position} of {queue.size}")
        page.keyboard.press("p" if human_truth(result) else "f")
        page.wait_for_function(
            "(n) => parseInt(document.querySelector('#queue-progress').innerText) >= n",
            arg=position,
        )
        page.wait_for_function(
            f"() => parseInt(document.querySelector('#queue-progress').innerText) >= {position}"
        )


def _half_width(page, live_server, project, run, rs):
    page.goto(f"{live_server.url}/projects/{project.pk}/runs/{run.pk}/")
    row = page.locator(f"#est-pass_rate-{rs.pk}")
    row.wait_for()
    sentence = page.locator(f"#est-sentence-pass_rate-{rs.pk}").inner_text()
    return float(row.get_attribute("data-half-width")), sentence


def test_lead_draws_an_active_sample_and_the_interval_narrows(page, live_server, setup):
    project, run = setup
    rs = run.run_scorers.get()
    login(page, live_server, "olivia", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/runs/{run.pk}/")
    # The corrected figures arrive by htmx once the run page has loaded.
    none_yet = page.locator(f"#est-none-{rs.pk}")
    none_yet.wait_for()
    assert none_yet.is_visible()
    page.click(f"#estimates-{rs.pk} >> text=Draw a calibration sample")
    page.wait_for_selector("#sample-plan")
    page.select_option("#calibration-design", "active")
    page.fill("#calibration-budget", "50")
    page.click("#calibration-create-submit")
    page.wait_for_url(lambda url: "/queues/" in url)
    queue = ReviewQueue.objects.get(source=ReviewQueue.Source.CALIBRATION)
    assert queue.design["design"] == "active" and queue.blind
    half = queue.size // 2

    _answer(
        _as(page, live_server, "rita"), live_server, queue, list(range(1, half + 1))
    )
    early, sentence = _half_width(page, live_server, project, run, rs)
    assert sentence.startswith("judge ") and "corrected" in sentence
    assert f"from {half} human labels" in sentence

    bea = _as(page, live_server, "bea")
    _answer(bea, live_server, queue, list(range(half + 1, queue.size + 1)))
    bea.context.close()
    late, sentence = _half_width(page, live_server, project, run, rs)
    assert f"from {queue.size} human labels" in sentence
    assert late < early
