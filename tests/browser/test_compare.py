"""Real browser: from the runs list, tick two runs of two dataset versions, compare
them, keep the regressed items and read one side by side with its word diff."""

from __future__ import annotations

import re

import pytest

from evalsite.accounts.models import Role
from tests.browser.conftest import login
from tests.factories import (
    DatasetFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)
from tests.review.builders import judged_claims, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD, HALF, BAD = (
    judged_claims("yes", "yes"),
    judged_claims("yes", "no"),
    judged_claims("no", "no"),
)


def _rows(spec):
    return [
        {"input": q, "output": out, "metadata": {"id": key}} for key, q, out in spec
    ]


@pytest.fixture
def scene():
    project = ProjectFactory(name="Browser compare")
    MembershipFactory(
        project=project, user=UserFactory(username="victor"), role=Role.VIEWER
    )
    v1 = DatasetFactory(
        project=project,
        name="qa",
        rows=_rows(
            [
                ("q1", "Capital of France?", "Paris is the capital of France."),
                ("q2", "Largest planet?", "Jupiter is the largest planet."),
                ("q3", "Removed question?", "Gone in v2."),
            ]
        ),
    )
    v2 = DatasetFactory(
        project=project,
        name="qa",
        rows=_rows(
            [
                ("q2", "Largest planet?", "Jupiter is the largest planet."),
                ("q1", "Capital of France?", "Lyon is the capital of France."),
                ("q4", "Added question?", "New in v2."),
            ]
        ),
    )
    a = make_run(project, dataset=v1, analyses={"faithfulness": [GOOD, HALF, GOOD]})
    b = make_run(project, dataset=v2, analyses={"faithfulness": [GOOD, BAD, GOOD]})
    return project, a, b


def test_runs_list_to_compare_filter_regressed_and_side_by_side(
    page, live_server, scene
):
    project, a, b = scene
    login(page, live_server, "victor", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/runs/")

    page.check(f"#compare-runs input[name=runs][value='{a.pk}']")
    page.check(f"#compare-runs input[name=runs][value='{b.pk}']")
    page.click("#compare-selected")
    # The older run is the baseline, named in the URL and the form.
    page.wait_for_url(re.compile(rf"/compare/\?.*a={a.pk}&b={b.pk}"))
    assert page.locator("select[name=a]").input_value() == str(a.pk)
    assert page.locator("select[name=b]").input_value() == str(b.pk)

    # The versions' items matched by id.
    summary = page.locator("#compare-summary")
    assert f"#{a.pk}" in summary.locator("h3").first.inner_text().split(" vs ")[0]
    match = page.locator("#compare-match-B").inner_text()
    assert "2 matched" in match and "1 only in A (removed)" in match
    assert "1 only in B (added)" in match
    assert "McNemar" in page.locator("#compare-methods").inner_text()
    assert page.locator("#compare-rows tbody tr").count() == 2

    # Keep the regressed items (htmx swaps the body and pushes the URL).
    page.click("#compare-filters a[data-only=regressions]")
    page.wait_for_url(re.compile(r"only=regressions"))
    rows = page.locator("#compare-rows tbody tr")
    assert rows.count() == 1
    assert "Capital of France?" in rows.first.inner_text()
    assert "regression" in (rows.first.get_attribute("class") or "")

    # Side by side, with the word diff of the two outputs.
    rows.first.locator("a.compare-side").click()
    side = page.locator("#compare-side-by-side")
    side.locator("#compare-word-diff").wait_for()
    assert "Paris is the capital of France." in side.inner_text()
    assert "Lyon is the capital of France." in side.inner_text()
    assert (
        side.locator("#compare-word-diff pre del").first.inner_text().strip() == "Paris"
    )
    assert (
        side.locator("#compare-word-diff pre ins").first.inner_text().strip() == "Lyon"
    )
    # The filter is still in place around it.
    assert page.locator("#compare-rows tbody tr").count() == 1

    # The removed item is one click from its count, and back again.
    page.click("#compare-match-B a[data-count=removed]")
    page.wait_for_url(re.compile(r"unmatched=removed"))
    removed = page.locator("#compare-unmatched-rows tbody tr")
    assert removed.count() == 1 and "Removed question?" in removed.first.inner_text()
    page.click("#compare-match-B a[data-count=added]")
    page.wait_for_url(re.compile(r"unmatched=added"))
    added = page.locator("#compare-unmatched-rows tbody tr")
    assert added.count() == 1 and "Added question?" in added.first.inner_text()
    page.click("#compare-unmatched a:has-text('back to the matched items')")
    page.wait_for_url(lambda url: "unmatched" not in url)
    assert page.locator("#compare-rows tbody tr").count() == 2


def test_compare_keeps_the_baseline_on_resubmit_and_swaps_it(page, live_server, scene):
    """A new key submitted from the form keeps run A, and the swap
    link makes run B the baseline (the removed item becomes the added one)."""
    project, a, b = scene
    login(page, live_server, "victor", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/runs/")
    page.check(f"#compare-runs input[name=runs][value='{b.pk}']")
    page.check(f"#compare-runs input[name=runs][value='{a.pk}']")
    page.click("#compare-selected")
    page.wait_for_url(re.compile(rf"a={a.pk}&b={b.pk}"))

    page.fill("#compare-key", "nope")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(re.compile(r"key=nope"))
    assert page.locator("select[name=a]").input_value() == str(a.pk)
    page.fill("#compare-key", "id")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(re.compile(r"key=id"))
    summary = page.locator("#compare-summary h3").first.inner_text()
    assert f"#{a.pk}" in summary.split(" vs ")[0]
    assert "1 only in A (removed)" in page.locator("#compare-match-B").inner_text()

    page.click("#compare-swap")
    page.wait_for_url(re.compile(rf"a={b.pk}&b={a.pk}"))
    assert page.locator("select[name=a]").input_value() == str(b.pk)
    summary = page.locator("#compare-summary h3").first.inner_text()
    assert f"#{b.pk}" in summary.split(" vs ")[0]


def test_compare_of_many_results_shows_rows_then_polls_in_the_figures(
    page, live_server, scene, settings
):
    """Past COMPARE_FIGURES_IN_REQUEST_MAX the page lists its rows with the figures
    marked as counting; the poll swaps them in, with the filters' counts."""
    settings.COMPARE_FIGURES_IN_REQUEST_MAX = 0
    project, a, b = scene
    login(page, live_server, "victor", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/compare/?a={a.pk}&b={b.pk}")
    assert page.locator("#compare-rows tbody tr").count() == 2
    assert page.locator("#compare-counting[role=status]").count() == 1
    assert "Regressed (" not in page.locator("#compare-filters").inner_text()
    page.locator("#compare-summary [data-stat=mean-delta]").wait_for()
    assert page.locator("#compare-counting").count() == 0
    assert "Regressed (1)" in page.locator("#compare-filters").inner_text()
    assert page.locator("#compare-rows tbody tr").count() == 2
