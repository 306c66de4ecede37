"""Real browser: the results matrix. Filter it, move across cells with the arrow keys,
open the item at a scorer with Enter; then build a queue from a matrix filter."""

from __future__ import annotations

import re

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Result
from evalsite.review.models import QueueEntry, ReviewQueue
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene():
    project = ProjectFactory(name="Browser matrix")
    MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    )
    # Four items × two scorers: faithfulness passes items 0 and 2, fails 1 and 3.
    analyses = [judged_claims("yes"), judged_claims("no")] * 2
    run = make_run(
        project,
        n_items=4,
        kinds=("faithfulness", "hallucination"),
        analyses={"faithfulness": analyses},
    )
    return project, run


def test_matrix_filter_arrow_keys_enter_then_queue_from_the_filter(
    page, live_server, scene
):
    project, run = scene
    faith, halluc = run.run_scorers.order_by("position")
    matrix = f"{live_server.url}/projects/{project.pk}/runs/{run.pk}/matrix/"
    login(page, live_server, "rita", "pw")
    page.goto(matrix)
    assert page.locator("#results-matrix tbody tr").count() == 4
    assert page.locator("#results-matrix thead th").count() == 3

    # Filter: faithfulness fails (htmx swaps the region and pushes the URL).
    page.select_option("#matrix-filters select[name=run_scorer]", str(faith.pk))
    page.wait_for_url(re.compile(rf"run_scorer={faith.pk}"))
    page.select_option("#matrix-filters select[name=final]", "fail")
    page.wait_for_url(re.compile(r"final=fail"))
    page.wait_for_function(
        "() => document.querySelectorAll('#results-matrix tbody tr').length === 2"
    )
    failing = list(
        Result.objects.filter(run=run, run_scorer=faith, final_passed=False).order_by(
            "item__index"
        )
    )
    assert [r.item.index for r in failing] == [1, 3]

    # Focus the first cell, move right (to hallucination) and down a row.
    first_cell = (
        page.locator("#results-matrix tbody tr").first.locator("[data-cell]").first
    )
    first_cell.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowRight")
    target = Result.objects.get(run=run, run_scorer=halluc, item__index=3)
    focused = page.evaluate("() => document.activeElement.getAttribute('href')")
    assert focused == f"/projects/{project.pk}/results/{target.pk}/"
    # Only the focused cell is in the tab order.
    assert page.locator("#results-matrix [data-cell][tabindex='0']").count() == 1

    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/results/{target.pk}/$"))

    # Back to the filtered matrix: build a queue from its filter.
    page.goto(f"{matrix}?run_scorer={faith.pk}&final=fail")
    button = page.locator("#queue-filtered")
    assert button.inner_text() == "Create queue from these 2 results"
    button.click()
    page.wait_for_url(re.compile(r"/queues/\d+/"))
    queue = ReviewQueue.objects.get(run=run)
    assert set(
        QueueEntry.objects.filter(queue=queue).values_list("result_id", flat=True)
    ) == {r.pk for r in failing}
