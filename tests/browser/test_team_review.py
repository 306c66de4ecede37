"""Real browser: two reviewers answer the same three results in a blind overlap-2
queue; the one they disagree on goes to adjudication; the adjudicator decides; the
run's aggregates and Krippendorff's alpha follow."""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from playwright.sync_api import expect

from evalsite.accounts.models import ReviewerPreferences, Role
from evalsite.evals.results.verdicts import review_version_touch
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import FinalRule, QueueEntry, Review
from evalsite.review.queues.services import queue_create
from scoring.agreement import krippendorff_alpha
from tests.browser.conftest import TIMEOUT_MS, AxeAudit, login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup():
    project = ProjectFactory(name="Team review")
    users = {}
    for name, role in (
        ("rita", Role.REVIEWER),
        ("bea", Role.REVIEWER),
        ("ada", Role.ADJUDICATOR),
    ):
        users[name] = MembershipFactory(
            project=project, user=UserFactory(username=name), role=role
        ).user
    # Every claim supported: the judge passes all three (score 1).
    run = make_run(
        project,
        n_items=3,
        analyses={"faithfulness": [judged_claims("yes", "yes")] * 3},
    )
    queue = queue_create(
        run=run,
        user=users["rita"],
        query=ResultQuery(sort="item"),
        overlap=2,
        final_rule=FinalRule.UNANIMOUS,
        blind=True,
        name="Overlap queue",
    )
    return project, run, queue, users


def _next(page) -> None:
    """j, once the card's last request is over (keys pressed while one is in flight
    are dropped on purpose: they would act on the card about to be replaced)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.keyboard.press("j")


def _answer(page, key: str, position: int) -> None:
    """Press the answer key once the card at `position` is idle."""
    page.wait_for_selector(f"#queue-card[data-position='{position}']")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.keyboard.press(key)


def test_two_blind_reviewers_adjudication_and_agreement(browser, live_server, setup):
    project, run, queue, users = setup
    bea_user = users["bea"]
    queue_url = f"{live_server.url}/projects/{project.pk}/queues/{queue.pk}/"
    rita_ctx, bea_ctx, ada_ctx = (browser.new_context() for _ in range(3))
    for ctx in (rita_ctx, bea_ctx, ada_ctx):
        ctx.set_default_timeout(3 * TIMEOUT_MS)
    rita, bea, ada = (ctx.new_page() for ctx in (rita_ctx, bea_ctx, ada_ctx))

    # Rita answers first (her answers move her on to the next item, the default):
    # pass with a note on result 1, then fail, then pass.
    login(rita, live_server, "rita", "pw")
    rita.goto(queue_url)
    assert rita.locator("#blind-notice").is_visible()  # the judge is hidden
    rita.fill("#answer-note", "RITA-SAYS-FINE")
    rita.click("#answer-pass")
    for position, key in ((2, "f"), (3, "p")):
        _answer(rita, key, position)
    rita.wait_for_selector("#overlap-reviews")  # the last one stays: no next item
    answers = dict(
        Review.objects.filter(reviewer__username="rita").values_list(
            "result__item__index", "passed"
        )
    )
    assert answers == {0: True, 1: False, 2: True}

    # Bea stays on an item after answering (her preference), to see the answers.
    ReviewerPreferences.objects.create(user=bea_user, advance_after_answer=False)
    login(bea, live_server, "bea", "pw")
    bea.goto(queue_url)
    bea.wait_for_selector("#queue-card[data-position='1']")
    # Blind to the judge and to Rita until she answers.
    card = bea.locator("#queue-card").inner_text()
    assert "RITA-SAYS-FINE" not in card and "rita" not in card
    assert bea.locator("#others-hidden").is_visible()
    assert bea.locator("#blind-notice").is_visible()
    bea.keyboard.press("p")
    bea.wait_for_selector("#overlap-reviews")
    answers_text = bea.locator("#overlap-reviews").inner_text()
    assert "RITA-SAYS-FINE" in answers_text and "rita" in answers_text
    assert bea.locator("#overlap-state").inner_text().strip() == "decided"
    _next(bea)
    _answer(bea, "f", 2)
    bea.wait_for_selector("#overlap-reviews")
    _next(bea)
    bea.wait_for_selector("#queue-card[data-position='3']")
    assert "rita" not in bea.locator("#queue-card").inner_text()
    _answer(bea, "f", 3)  # Rita said pass: a disagreement
    bea.wait_for_selector("text=needs adjudication")
    states = dict(
        QueueEntry.objects.filter(queue=queue).values_list("position", "state")
    )
    assert states == {1: "decided", 2: "decided", 3: "adjudicate"}

    # Ada adjudicates from the adjudication queue.
    login(ada, live_server, "ada", "pw")
    ada.goto(f"{live_server.url}/projects/{project.pk}/adjudication/")
    assert "1 result waiting" in ada.locator("#adjudication-count").inner_text()
    ada.click(".adjudicate-open")
    table = ada.locator("#adjudicate-answers").inner_text()
    assert "rita" in table and "bea" in table
    ada.fill("#adjudicate-note", "claim 2 is wrong")
    ada.click("#adjudicate-fail")
    ada.wait_for_url(re.compile(r"/adjudication/$"))
    assert ada.locator("#adjudication-empty").is_visible()

    # The run's aggregates: every result reviewed, final pass rate 1 of 3.
    rita.goto(queue_url + "?pos=3")
    rs = run.run_scorers.get()
    assert rita.locator(f"#agg-{rs.pk} .agg-final-pass").inner_text().startswith("33")
    # Krippendorff's alpha on the agreement page: units (pass, pass), (fail, fail),
    # (pass, fail).
    expected = krippendorff_alpha([[True, True], [False, False], [True, False]])
    assert expected is not None
    rita.goto(f"{live_server.url}/projects/{project.pk}/runs/{run.pk}/agreement/")
    alpha = rita.locator(
        f"#agreement-queue-{queue.pk} tr[data-figure='alpha_pass'] .alpha-pass"
    ).inner_text()
    assert alpha == f"{expected:.2f}"
    # After a review write the page shows those figures at once, marked, and the
    # region polls until the recount (eager here: sent by that load) replaces them.
    with transaction.atomic():
        review_version_touch(run_scorer=rs)
    rita.goto(f"{live_server.url}/projects/{project.pk}/runs/{run.pk}/agreement/")
    expect(rita.locator("#agreement-recounting")).to_contain_text("Recounting")
    assert AxeAudit(rita).check() == []  # the marked page
    expect(rita.locator("#agreement-recounting")).to_have_count(0, timeout=10_000)
    alpha = rita.locator(
        f"#agreement-queue-{queue.pk} tr[data-figure='alpha_pass'] .alpha-pass"
    ).inner_text()
    assert alpha == f"{expected:.2f}"
    assert AxeAudit(rita).check() == []  # the recounted region
    for ctx in (rita_ctx, bea_ctx, ada_ctx):
        ctx.close()
