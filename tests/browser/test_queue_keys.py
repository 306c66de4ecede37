"""Real browser: keys you can trust, and work that finds the reviewer.

Keys pressed while the card loads wait their turn (five quick `j` move five items) or
are refused visibly; `u` after an automatic move undoes the answer just given (the
counts and the export follow); skip and flag; the navigation's waiting count follows
the answers.
"""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from evalsite.accounts.models import Role
from evalsite.evals.models import Result
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import QueueEntry, QueueFlag, Review
from evalsite.review.queues.services import queue_create
from evalsite.review.queues.waiting import waiting_for
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup():
    project = ProjectFactory(name="Browser keys")
    reviewer = MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    ).user
    run = make_run(project, n_items=7, kinds=("faithfulness",))
    queue = queue_create(
        run=run, user=reviewer, query=ResultQuery(sort="item"), name="keys"
    )
    # Load the URLconf and the templates once in-process, so the first page the
    # browser asks for does not pay for them on a busy machine.
    warm = Client()
    warm.force_login(reviewer)
    warm.get(f"/projects/{project.pk}/queues/{queue.pk}/")
    return project, reviewer, run, queue


def _open(page, live_server, queue, pos=1):
    login(page, live_server, "rita", "pw")
    page.goto(
        f"{live_server.url}/projects/{queue.project_id}/queues/{queue.pk}/?pos={pos}"
    )
    page.wait_for_selector(f"text=Result {pos} of {queue.size}")


def _result(queue, position):
    return Result.objects.get(
        pk=QueueEntry.objects.get(queue=queue, position=position).result_id
    )


def _badge(page) -> int:
    return int(page.locator("#nav-waiting").get_attribute("data-count"))


def test_five_quick_j_move_exactly_five_items(page, live_server, setup):
    project, reviewer, run, queue = setup
    _open(page, live_server, queue)
    for _ in range(5):
        page.keyboard.press("j")
        page.wait_for_timeout(50)
    page.wait_for_selector("#queue-card[data-position='6']")
    # Every key was taken: none waits, and the card stays at 6.
    page.wait_for_function(
        "() => document.querySelector('#key-status').innerText === ''"
    )
    assert page.url.endswith("?pos=6")
    assert page.locator("#queue-card").get_attribute("data-position") == "6"


def test_a_key_with_no_control_is_refused_visibly(page, live_server, setup):
    project, reviewer, run, queue = setup
    _open(page, live_server, queue, pos=7)
    page.keyboard.press("j")
    status = page.locator("#key-status")
    assert "Key j: no next item" in status.inner_text()
    assert page.locator("#queue-card").get_attribute("data-position") == "7"


def test_u_after_auto_advance_undoes_the_answer_just_given(page, live_server, setup):
    project, reviewer, run, queue = setup
    _open(page, live_server, queue)
    before = _badge(page)
    assert before == 7
    page.keyboard.press("f")
    page.wait_for_selector("#queue-card[data-position='2']")
    assert page.locator("#queue-progress").inner_text() == "1 of 7 reviewed"
    first = _result(queue, 1)
    assert first.human_passed is False and first.reviewed
    # The badge in the navigation followed the answer.
    assert (
        _badge(page)
        == before - 1
        == waiting_for(project_id=project.pk, user=reviewer).total
    )

    page.keyboard.press("u")
    page.wait_for_selector("#queue-card[data-position='1']")
    page.wait_for_function(
        "() => document.querySelector('#queue-progress').innerText === '0 of 7 reviewed'"
    )
    assert page.url.endswith("?pos=1")
    first = _result(queue, 1)
    assert first.human_passed is None and not first.reviewed
    assert (
        _badge(page)
        == before
        == waiting_for(project_id=project.pk, user=reviewer).total
    )
    # The export says the same: item 1 is not reviewed and has no human verdict.
    client = Client()
    client.force_login(reviewer)
    response = client.get(f"/projects/{project.pk}/runs/{run.pk}/export.csv")
    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    )
    row = next(r for r in rows if r["result_id"] == str(first.pk))
    assert row["reviewed"].lower() in ("false", "0", "")
    assert not row["reviewer"]


def test_skip_then_flag_with_a_reason(page, live_server, setup):
    project, reviewer, run, queue = setup
    _open(page, live_server, queue, pos=2)
    assert page.locator("#queue-skip kbd").inner_text() == "s"
    page.keyboard.press("s")
    page.wait_for_selector("#queue-card[data-position='3']")
    # Skipping wrote nothing: item 2 still waits.
    assert not _result(queue, 2).reviewed
    assert _badge(page) == 7

    page.keyboard.press("x")
    reason = page.locator("#flag-reason")
    assert reason.is_visible()
    page.keyboard.type("the output is cut off")
    page.keyboard.press("Enter")
    page.wait_for_selector("#queue-card[data-position='4']")
    flag = QueueFlag.objects.get()
    assert flag.entry.position == 3 and flag.reason == "the output is cut off"
    assert flag.flagged_by == reviewer
    assert _badge(page) == 6

    # On the flagged list with who and why.
    page.click("text=Flagged")
    page.wait_for_selector("#flag-list")
    row = page.locator(f"#flag-{flag.pk}")
    assert "the output is cut off" in row.inner_text() and "rita" in row.inner_text()


def test_every_key_is_drawn_on_its_control(page, live_server, setup):
    project, reviewer, run, queue = setup
    _open(page, live_server, queue, pos=2)
    keys = page.eval_on_selector_all(
        "#queue-card [data-key]",
        "els => els.map(e => [e.dataset.key, (e.querySelector('kbd') || {}).innerText"
        " || (e.closest('label') && e.closest('label').querySelector('kbd') || {}).innerText])",
    )
    assert {k for k, _ in keys} >= {"j", "k", "a", "p", "f", "u", "s", "x", "1"}
    for key, drawn in keys:
        assert drawn == key, (key, drawn)
    assert page.locator("#keys-help-button kbd").inner_text() == "?"


def test_u_after_auto_advance_withdraws_a_team_queue_answer(page, live_server, setup):
    project, reviewer, run, _ = setup
    MembershipFactory(
        project=project, user=UserFactory(username="bea"), role=Role.REVIEWER
    )
    team = queue_create(
        run=run, user=reviewer, query=ResultQuery(sort="item"), name="team", overlap=2
    )
    _open(page, live_server, team)
    before = _badge(page)
    page.keyboard.press("p")
    page.wait_for_selector("#queue-card[data-position='2']")
    entry = QueueEntry.objects.get(queue=team, position=1)
    assert entry.answers == 1
    assert _badge(page) == before - 1

    page.keyboard.press("u")
    page.wait_for_selector("#queue-card[data-position='1']")
    page.wait_for_selector("#answer-pass")
    entry.refresh_from_db()
    assert entry.answers == 0
    assert not Review.objects.filter(queue=team, reviewer=reviewer).exists()
    assert page.url.endswith("?pos=1")
    assert (
        _badge(page)
        == before
        == waiting_for(project_id=project.pk, user=reviewer).total
    )
