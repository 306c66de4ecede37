"""Real browser: a queue that flows (issue 17 parts 4 and 6).

`p` answers and moves on; with single-key shortcuts off no key does anything but
Ctrl+Enter still sends a comment; `?` opens the guidelines and keys; the reference's word
diff loads; the item page's history follows a flip.
"""

from __future__ import annotations

import pytest

from evalsite.accounts.models import AuditEvent, Role
from evalsite.evals.models import Result
from evalsite.review.models import Comment, QueueEntry
from evalsite.review.schemas import ResultQuery
from evalsite.review.services import queue_create
from evalsite.review.services.guidelines import guideline_save
from evalsite.review.services.preferences import reviewer_preferences_set
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup():
    project = ProjectFactory(name="Browser flow")
    owner = MembershipFactory(
        project=project, user=UserFactory(username="olivia"), role=Role.OWNER
    ).user
    reviewer = MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    ).user
    run = make_run(project, n_items=3, kinds=("faithfulness",))
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    guideline_save(
        project=project,
        queue=queue,
        body="**Fail** any answer that invents a number.",
        user=owner,
    )
    return project, reviewer, queue


def _open_queue(page, live_server, queue):
    login(page, live_server, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{queue.project_id}/queues/{queue.pk}/?pos=1")
    page.wait_for_selector("text=Result 1 of 3")


def _result(queue, position):
    return QueueEntry.objects.get(queue=queue, position=position).result


def test_p_answers_and_moves_to_the_next_item(page, live_server, setup):
    project, reviewer, queue = setup
    _open_queue(page, live_server, queue)
    # The guidelines are beside the card.
    panel = page.locator("#queue-guidelines")
    assert panel.locator("strong", has_text="Fail").is_visible()

    page.keyboard.press("p")
    page.wait_for_selector("text=Result 2 of 3")
    assert page.url.endswith("?pos=2")
    first = Result.objects.get(pk=_result(queue, 1).pk)
    assert first.human_passed is True and first.reviewed
    assert page.locator("#queue-progress").inner_text() == "1 of 3 reviewed"


def test_without_advancing_p_answers_and_stays(page, live_server, setup):
    project, reviewer, queue = setup
    reviewer_preferences_set(
        user=reviewer, keyboard_shortcuts=True, advance_after_answer=False
    )
    _open_queue(page, live_server, queue)
    page.keyboard.press("f")
    page.wait_for_function(
        "() => document.querySelector('#queue-progress').innerText === '1 of 3 reviewed'"
    )
    assert "Result 1 of 3" in page.locator("#queue-card").inner_text()
    assert Result.objects.get(pk=_result(queue, 1).pk).human_passed is False


def test_with_shortcuts_off_no_single_key_acts_but_ctrl_enter_comments(
    page, live_server, setup
):
    project, reviewer, queue = setup
    reviewer_preferences_set(
        user=reviewer, keyboard_shortcuts=False, advance_after_answer=True
    )
    _open_queue(page, live_server, queue)
    for key in ("p", "f", "a", "1", "j", "?"):
        page.keyboard.press(key)
    page.wait_for_timeout(600)  # long enough for a request the keys should not send
    assert "Result 1 of 3" in page.locator("#queue-card").inner_text()
    assert not page.locator("#keys-help").is_visible()
    assert not AuditEvent.objects.filter(result_id=_result(queue, 1).pk).exists()

    # The buttons still work: the ? button opens the dialog.
    page.click("#keys-help-button")
    assert page.locator("#keys-help").is_visible()
    page.click("#keys-help-close")

    result = _result(queue, 1)
    box = page.locator(f"#comment-form-{result.pk} textarea")
    box.click()
    page.keyboard.type("Invented a number")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(
        f"#comment-list-{result.pk} li:has-text('Invented a number')"
    )
    assert Comment.objects.get(result=result).body == "Invented a number"
    assert box.input_value() == ""


def test_question_mark_opens_guidelines_keys_and_preferences(page, live_server, setup):
    project, reviewer, queue = setup
    _open_queue(page, live_server, queue)
    page.keyboard.press("?")
    dialog = page.locator("#keys-help")
    assert dialog.is_visible()
    assert dialog.locator("strong", has_text="Fail").is_visible()
    assert "Ctrl" in dialog.inner_text()
    # Turning the shortcuts off from the dialog comes back to the same item.
    dialog.locator("#pref-shortcuts").uncheck()
    dialog.locator("#preferences-save").click()
    page.wait_for_selector("#queue-page[data-shortcuts='off']")
    assert page.url.endswith("?pos=1")
    page.keyboard.press("?")
    page.wait_for_timeout(300)
    assert not page.locator("#keys-help").is_visible()


def test_reference_diff_loads_and_item_history_follows_a_flip(page, live_server):
    project = ProjectFactory(name="Browser diff")
    MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    )
    run = make_run(project, kinds=("factuality", "faithfulness"))
    factuality = Result.objects.get(run=run, run_scorer__kind="factuality")
    login(page, live_server, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/results/{factuality.pk}/")
    # Factuality compares with the reference: it is open and the diff loads by itself.
    assert page.locator(f"#reference-{factuality.pk}").get_attribute("open") is not None
    page.wait_for_selector(f"#word-diff-{factuality.pk} .word-diff-text ins")

    faithfulness = Result.objects.get(run=run, run_scorer__kind="faithfulness")
    page.goto(f"{live_server.url}/projects/{project.pk}/results/{faithfulness.pk}/")
    assert page.locator(f"#reference-{faithfulness.pk}").get_attribute("open") is None
    assert "No changes recorded yet." in page.locator("#item-history").inner_text()
    page.locator(f"#analysis-{faithfulness.pk}-row-1 button[data-flip]").first.click()
    page.wait_for_function(
        "() => document.querySelector('#item-history').innerText.includes('verdict 1')"
    )
    assert (
        "rita set verdict 1: supported →" in page.locator("#item-history").inner_text()
    )
