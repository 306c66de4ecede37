"""Real browser: create a pairwise queue from the run page, walk it
with the keyboard (1 / 2 / 3, c for a reason), blind to the other reviewer until
answering; the answers map back to the real runs; with single-key shortcuts off the
keys do nothing and the buttons still work; the agreement page shows the figures."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import ReviewerPreferences, Role
from evalsite.review.models import PairwiseItem, Preference, ReviewQueue
from evalsite.review.pairwise.services import pairwise_answer, pairwise_queue_create
from tests.browser.conftest import TIMEOUT_MS, login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.pairwise_builders import make_model_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _idle(page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def _press_on(page, position: int, key: str) -> None:
    """Press `key` once the card at `position` is shown and idle."""
    page.wait_for_selector(f"#queue-card[data-position='{position}']")
    _idle(page)
    page.keyboard.press(key)


def test_pairwise_queue_walked_with_the_keyboard(browser, live_server):
    project = ProjectFactory(name="Pairwise")
    users = {
        name: MembershipFactory(
            project=project, user=UserFactory(username=name), role=role
        ).user
        for name, role in (
            ("olivia", Role.OWNER),
            ("rita", Role.REVIEWER),
            ("bea", Role.REVIEWER),
        )
    }
    run_a, run_b = make_model_runs(project, n=3)
    base = f"{live_server.url}/projects/{project.pk}"
    contexts = [browser.new_context() for _ in range(3)]
    for ctx in contexts:
        ctx.set_default_timeout(3 * TIMEOUT_MS)
    olivia, rita, bea = (ctx.new_page() for ctx in contexts)

    # The owner creates the queue from run A's page: two reviewers per pair.
    login(olivia, live_server, "olivia", "pw")
    olivia.goto(f"{base}/runs/{run_a.pk}/")
    olivia.click("#run-pairwise-link")
    olivia.select_option("#pairwise-run-b", str(run_b.pk))
    olivia.fill("#pairwise-overlap-input", "2")
    olivia.fill("#pairwise-seed", "11")
    olivia.click("#pairwise-create-submit")
    olivia.wait_for_selector("#queue-card[data-position='1']")
    queue = ReviewQueue.objects.get(kind="pairwise")
    assert (queue.run_id, queue.run_b_id, queue.size, queue.overlap) == (
        run_a.pk,
        run_b.pk,
        3,
        2,
    )
    a_left = dict(
        PairwiseItem.objects.filter(queue=queue).values_list("position", "a_left")
    )
    queue_url = f"{base}/pairwise/{queue.pk}/"

    # Bea answered pair 1 already (through the service): Rita must not see it.
    pairwise_answer(
        queue=queue,
        position=1,
        user=users["bea"],
        choice="a",
        reason="BEA-SECRET",
    )

    login(rita, live_server, "rita", "pw")
    rita.goto(queue_url)
    rita.wait_for_selector("#queue-card[data-position='1']")
    card = rita.locator("#queue-card").inner_text()
    assert "BEA-SECRET" not in card and "bea" not in card
    assert rita.locator("#others-hidden").is_visible()
    assert rita.locator("#left-run").count() == 0  # which run is which: hidden
    assert rita.locator("#win-rates-hidden").is_visible()
    # c: write a reason, Esc leaves the box, 1: the left response is better; the
    # next pair follows (the default preference).
    rita.keyboard.press("c")
    rita.keyboard.type("left is clearer")
    rita.keyboard.press("Escape")
    rita.keyboard.press("1")
    _press_on(rita, 2, "2")
    _press_on(rita, 3, "3")
    rita.wait_for_selector("#my-answer")  # the last pair stays: there is no next
    mine = {
        p.pair.position: p
        for p in Preference.objects.filter(reviewer=users["rita"]).select_related(
            "pair"
        )
    }
    assert {pos: p.side for pos, p in mine.items()} == {
        1: "left",
        2: "right",
        3: "tie",
    }
    # Each side maps back to the run shown there.
    assert mine[1].choice == ("a" if a_left[1] else "b")
    assert mine[2].choice == ("b" if a_left[2] else "a")
    assert mine[3].choice == "tie"
    assert mine[1].reason == "left is clearer"
    assert all(p.seconds is not None for p in mine.values())  # the timer ran

    # Back to pair 1 (k twice): now answered, Bea's answer and the runs show.
    _idle(rita)
    rita.keyboard.press("k")
    _press_on(rita, 2, "k")
    rita.wait_for_selector("#queue-card[data-position='1']")
    assert "BEA-SECRET" in rita.locator("#pair-preferences").inner_text()
    assert rita.locator("#left-run").inner_text().startswith("A" if a_left[1] else "B")
    # Rita has nothing left to answer: the win rates are hers to see.
    assert rita.locator(".win-rates").is_visible()

    # Bea turned single-key shortcuts off: 2 does nothing, the button still works.
    ReviewerPreferences.objects.create(
        user=users["bea"], keyboard_shortcuts=False, advance_after_answer=False
    )
    login(bea, live_server, "bea", "pw")
    bea.goto(queue_url + "?pos=2")
    bea.wait_for_selector("#queue-card[data-position='2']")
    bea.keyboard.press("2")
    bea.wait_for_timeout(300)
    assert not Preference.objects.filter(
        reviewer=users["bea"], pair__position=2
    ).exists()
    bea.click("#answer-right")
    bea.wait_for_selector("#pair-preferences")
    assert (
        Preference.objects.get(reviewer=users["bea"], pair__position=2).side == "right"
    )

    # The run's agreement page loads the pairwise figures. On pair 2 both chose the
    # right response, so they agree; on pair 1 they agree when Rita's left was A.
    olivia.goto(f"{base}/runs/{run_a.pk}/agreement/")
    olivia.wait_for_selector(f"#pairwise-figures-{queue.pk}")
    figures = olivia.locator(f"#pairwise-figures-{queue.pk}").inner_text()
    assert "Wilson" in figures
    percent = olivia.locator(
        f"#pairwise-figures-{queue.pk} tr[data-figure='pairwise-percent'] td"
    ).first.inner_text()
    expected = ((mine[1].choice == "a") + 1) / 2
    assert percent == f"{expected * 100:.0f} %"
    for ctx in contexts:
        ctx.close()


def test_pairwise_pages_load_under_the_policy(page, live_server, project, owner):
    """The pairwise pages (create, queue with figures, the run's figures, the
    agreement page that loads them) without a CSP violation or a script error."""
    from tests.browser.test_csp import _visit, _watch

    run_a, run_b = make_model_runs(project, n=2)
    queue = pairwise_queue_create(run_a=run_a, run_b=run_b, user=owner, overlap=1)
    pairwise_answer(queue=queue, position=1, user=owner, side="left", reason="r")
    problems = _watch(page)
    login(page, live_server, owner.get_username(), "pw")
    base = f"{live_server.url}/projects/{project.pk}"
    for path in (
        f"/runs/{run_a.pk}/pairwise/",
        f"/pairwise/{queue.pk}/?pos=1",
        f"/pairwise/{queue.pk}/?pos=2",
        f"/runs/{run_b.pk}/pairwise/agreement/",
        f"/runs/{run_a.pk}/agreement/",
    ):
        _visit(page, base + path, problems)
    page.wait_for_selector(f"#pairwise-figures-{queue.pk}")
    assert problems == []
