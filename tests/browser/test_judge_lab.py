"""Real browser: a lead opens the judge lab of a scorer whose judge is biased towards
"yes", inserts the examples the lab proposes from the reviewers' corrections,
replays, sees kappa rise on the held-out labels, promotes the candidate; the next run
records the new judge version."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Result, ScorerConfig
from scoring.offline_judge import start_server
from tests.browser.conftest import login
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.lab.builders import ROWS, biased_labelled_world, judged_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def judge_server():
    server = start_server(port=0, enable_control=True)
    yield server
    server.stop()


@pytest.fixture
def setup(judge_server):
    project = ProjectFactory(name="Browser lab")
    owner = UserFactory(username="olivia")
    reviewer = UserFactory(username="rita")
    MembershipFactory(project=project, user=owner, role=Role.OWNER)
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    world = biased_labelled_world(project, owner, reviewer, judge_server)
    return project, owner, world


def _kappas(page) -> list[float]:
    cells = page.locator('#lab-versions-table td[data-figure="kappa"]')
    return [
        float(cells.nth(i).get_attribute("data-value")) for i in range(cells.count())
    ]


def test_lead_improves_the_judge_with_corrections_and_promotes_it(
    page, live_server, setup
):
    project, owner, world = setup
    scorer = world["scorer"]
    login(page, live_server, "olivia", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/scorers/")
    page.click("text=Judge lab")
    page.wait_for_selector("#lab-label-count")
    assert page.inner_text("#lab-label-count") == str(ROWS)
    assert page.is_visible("#lab-no-versions")

    page.fill("#lab-new-candidate input[name=name]", "Learns from corrections")
    page.click("#lab-new-candidate button[type=submit]")
    page.wait_for_selector("#lab-add-proposed")
    assert page.locator("#lab-proposed tbody tr").count() == 4
    page.click("#lab-add-proposed")
    page.wait_for_function(
        "() => document.querySelector('#lab-example-count').innerText === '4'"
    )
    assert page.locator("#lab-examples tbody tr").count() == 4

    page.click("#lab-preview-replay")
    page.wait_for_selector("#lab-replay-confirm")
    assert f"{ROWS - 4} labelled items" in page.inner_text("#lab-preview-text")
    assert "free (offline heuristic judge)" in page.inner_text("#lab-preview-text")
    page.click("#lab-replay-confirm")
    page.wait_for_selector("#lab-versions-table")
    assert page.inner_text("#lab-items") == str(ROWS - 4)
    assert page.inner_text("#lab-held-out") == "4"
    current, candidate = _kappas(page)
    assert current == pytest.approx(0.0)
    assert candidate == pytest.approx(1.0)

    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#lab-promote")
    page.wait_for_selector("text=the next run judges with it")
    new = ScorerConfig.objects.get(project=project, archived=False)
    assert new.version == scorer.version + 1
    assert len(new.options["examples"]) == 4

    new.project = project
    run = judged_run(project, owner, world["dataset"], new)
    rs = run.run_scorers.get()
    old = world["run"].run_scorers.get()
    assert rs.judge_version_id and rs.judge_version_id != old.judge_version_id
    assert set(
        Result.objects.filter(run=run).values_list("judge_version_id", flat=True)
    ) == {rs.judge_version_id}
