"""Real browser: a reviewer works a queue with the keyboard (flip a verdict, undo)."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Override
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.queues.services import queue_create
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup():
    project = ProjectFactory(name="Browser review")
    reviewer = MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    ).user
    # Two items; faithfulness analysis [yes, no, unsure] → 0.33 each (judge fail).
    run = make_run(project, n_items=2, kinds=("faithfulness",))
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    return project, reviewer, run, queue


def test_reviewer_flips_a_verdict_with_a_key_and_undoes_it(page, live_server, setup):
    project, reviewer, run, queue = setup
    result = queue.entries.get(position=1).result
    run_scorer = result.run_scorer
    login(page, live_server, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/queues/{queue.pk}/")

    final_score = page.locator(f"#result-scores-{result.pk} .final-score")
    final_mean = page.locator(f"#agg-{run_scorer.pk} .agg-final-mean")
    progress = page.locator("#queue-progress")
    assert final_score.inner_text().strip() == "0.33"
    assert final_mean.inner_text().strip() == "0.33"
    assert progress.inner_text() == "0 of 2 reviewed"

    # Keys are ignored while typing: "1" in the comment box flips nothing.
    page.click(f"#comment-form-{result.pk} textarea")
    page.keyboard.type("1")
    page.keyboard.press("Escape")
    assert not Override.objects.exists()

    # Key 1: verdict 1 (supported) → contradicted; score 0.33 → 0, mean over 2 items → 0.165.
    page.keyboard.press("1")
    page.wait_for_function(
        f"() => document.querySelector('#result-scores-{result.pk} .final-score').innerText.trim() === '0'"
    )
    assert final_mean.inner_text().strip() == "0.165"
    assert progress.inner_text() == "1 of 2 reviewed"
    assert page.locator("#action-undo").is_enabled()

    # u: undo → the score, the aggregate and the progress return.
    page.keyboard.press("u")
    page.wait_for_function(
        f"() => document.querySelector('#result-scores-{result.pk} .final-score').innerText.trim() === '0.33'"
    )
    assert final_mean.inner_text().strip() == "0.33"
    assert progress.inner_text() == "0 of 2 reviewed"
    override = Override.objects.get()
    assert override.path == "verdicts.0.verdict" and override.reverted_by == reviewer

    # ? shows the keys; j moves to the next result and the URL follows.
    page.keyboard.press("?")
    assert page.locator("#keys-help").is_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.wait_for_selector("text=Result 2 of 2")
    assert page.url.endswith("?pos=2")
