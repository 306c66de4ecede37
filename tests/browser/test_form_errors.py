"""Real browser: errors where the eye is.

An out-of-range score on the item page's override form is said right under the field,
with the typed value kept and the focus on it; the new-scorer form's name follows its
kind until it is edited by hand."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Override, Result
from scoring import KINDS
from tests.browser.conftest import login
from tests.factories import (
    JudgeConnectionFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)
from tests.review.builders import make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def project():
    return ProjectFactory(name="Errors")


def test_an_out_of_range_score_is_said_under_the_field_with_the_value_kept(
    page, live_server, project
):
    MembershipFactory(
        project=project, user=UserFactory(username="rita"), role=Role.REVIEWER
    )
    run = make_run(project, n_items=1, kinds=("faithfulness",))
    result = Result.objects.get(run=run)
    login(page, live_server, "rita", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/results/{result.pk}/")
    field = page.locator(f"#override-score-{result.pk}")
    field.fill("7")
    page.click(f"#result-panel-{result.pk} .override-score button[type=submit]")
    error = page.locator(f"#override-score-error-{result.pk}")
    error.wait_for()
    assert error.inner_text() == "Must be between 0 and 1."
    field = page.locator(f"#override-score-{result.pk}")  # swapped in by htmx
    assert field.input_value() == "7"
    assert field.get_attribute("aria-invalid") == "true"
    assert field.evaluate("el => el === document.activeElement")
    # Right under the field, not 720 px away: within a line or two of it.
    gap = error.bounding_box()["y"] - (
        field.bounding_box()["y"] + field.bounding_box()["height"]
    )
    assert 0 <= gap < 40
    assert not page.locator(f"#panel-error-{result.pk}").count()
    assert not Override.objects.exists()
    # Corrected in place, it saves.
    field.fill("0.5")
    page.click(f"#result-panel-{result.pk} .override-score button[type=submit]")
    page.wait_for_function(
        f"() => !document.getElementById('override-score-error-{result.pk}')"
    )
    assert Override.objects.get().new_value == 0.5


def test_the_new_scorer_name_follows_the_kind_until_edited(page, live_server, project):
    MembershipFactory(
        project=project, user=UserFactory(username="olga"), role=Role.OWNER
    )
    JudgeConnectionFactory(project=project, name="offline", is_offline=True)
    login(page, live_server, "olga", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/scorers/new")
    name = page.locator("#id_name")
    assert name.input_value() == KINDS["faithfulness"].label
    page.select_option("#id_kind", "hallucination")
    assert name.input_value() == KINDS["hallucination"].label
    page.select_option("#id_kind", "toxicity")
    assert name.input_value() == KINDS["toxicity"].label
    name.fill("My own name")
    page.select_option("#id_kind", "bias")
    assert name.input_value() == "My own name"
