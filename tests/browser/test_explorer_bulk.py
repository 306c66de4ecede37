"""Real browser: the explorer at work. Tick two rows, accept them in bulk and see them
reviewed; save a filter and apply it again later."""

from __future__ import annotations

import re

import pytest

from evalsite.accounts.models import AuditEvent, Role
from evalsite.evals.models import Result
from evalsite.review.models import SavedFilter
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene():
    project = ProjectFactory(name="Browser explorer")
    MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    )
    # Four items: the judge passes 0 and 2, fails 1 and 3.
    analyses = [judged_claims("yes"), judged_claims("no")] * 2
    run = make_run(project, n_items=4, analyses={"faithfulness": analyses})
    item = run.dataset.items.get(index=1)
    item.input = "Which city is the <capital> of France?"
    item.save()
    return project, run


def test_select_two_rows_accept_them_then_save_and_reapply_a_filter(
    page, live_server, scene
):
    project, run = scene
    first, second = Result.objects.filter(run=run).order_by("item__index")[:2]
    explorer = f"{live_server.url}/projects/{project.pk}/runs/{run.pk}/results/"
    login(page, live_server, "rita", "pw")
    page.goto(explorer)

    # The question is shown beside the output, as text.
    question = page.locator(f"#result-row-{second.pk} .row-question")
    assert question.inner_text() == "Which city is the <capital> of France?"

    # Select page ticks every row; ticking two by hand counts two.
    page.check("#select-page")
    assert page.locator("#bulk-selected-count").inner_text() == "4"
    page.uncheck("#select-page")
    page.check(f"#result-row-{first.pk} input.row-select")
    page.check(f"#result-row-{second.pk} input.row-select")
    assert page.locator("#bulk-selected-count").inner_text() == "2"
    assert page.is_checked("#bulk-scope-selected")

    page.click("#bulk-accept")
    page.wait_for_selector("text=Accepted 2 results.")
    for result in (first, second):
        reviewed_cell = page.locator(f"#result-row-{result.pk} td").nth(9)
        assert reviewed_cell.inner_text().strip() == "✓"
    assert {r.pk for r in Result.objects.filter(reviewed=True)} == {first.pk, second.pk}
    assert AuditEvent.objects.filter(action="result.accept").count() == 2

    # Filter the failing results (htmx swaps the region), save the filter by name.
    page.select_option("#explorer-filters select[name=final]", "fail")
    page.wait_for_url(re.compile(r"final=fail"))
    page.click("#explorer-saved-filters summary")
    page.fill("#saved-filter-form input[name=name]", "Failing")
    page.click("#save-filter")
    page.wait_for_selector("text=Filter “Failing” saved.")
    saved = SavedFilter.objects.get()
    assert saved.query == "final=fail"

    # Back to the whole run, then apply it again from the list.
    page.goto(explorer)
    assert page.locator("#results-table tbody tr").count() == 4
    # The list is open whenever I have saved filters.
    assert page.is_visible("#saved-filter-list")
    page.click("#saved-filter-list a:has-text('Failing')")
    page.wait_for_url(re.compile(r"final=fail"))
    assert page.locator("#results-table tbody tr").count() == 2
    assert page.locator("#explorer-filters select[name=final]").input_value() == "fail"
