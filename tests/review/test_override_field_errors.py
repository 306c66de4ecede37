"""A refused override value is said at its own control, with what was typed kept:
through htmx (the panel comes back) and without JavaScript (the page comes back, 400)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evalsite.evals.models import Override, Result
from tests.conftest import login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def result(project):
    run = make_run(project, kinds=["faithfulness"])
    return Result.objects.get(run=run)


def _post(client, result, data, **headers):
    url = reverse("review:override_create", args=[result.run.project_id, result.pk])
    return client.post(url, data, **headers)


def _score_input(html, result):
    match = re.search(rf'<input[^>]*id="override-score-{result.pk}"[^>]*>', html)
    assert match, "the score field is on the page"
    return match.group(0)


@pytest.mark.parametrize("htmx", [True, False])
def test_an_out_of_range_score_is_refused_at_the_field_with_the_value_kept(
    client, reviewer, result, htmx
):
    login(client, reviewer)
    before = result.final_score
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    resp = _post(client, result, {"kind": "score", "value": "7"}, **headers)
    html = resp.content.decode()
    assert resp.status_code == (200 if htmx else 400)
    field = _score_input(html, result)
    assert 'value="7"' in field  # what was typed, not the current score
    assert 'aria-invalid="true"' in field
    assert f'aria-describedby="override-score-error-{result.pk}"' in field
    error = re.search(
        rf'<small[^>]*id="override-score-error-{result.pk}"[^>]*>([^<]*)</small>', html
    )
    assert error and error.group(1) == "Must be between 0 and 1."
    # Said at the field, not in the banner above the panel.
    assert f'id="panel-error-{result.pk}"' not in html
    # The error follows its field and comes before the button that sent it.
    assert html.index(field) < error.start() < html.index("Set score", error.start())
    result.refresh_from_db()
    assert result.final_score == before and not Override.objects.exists()


def test_a_score_that_is_not_a_number_is_refused_at_the_field(client, reviewer, result):
    login(client, reviewer)
    html = _post(
        client, result, {"kind": "score", "value": "abc"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'value="abc"' in _score_input(html, result)
    assert "Enter a number." in html
    assert not Override.objects.exists()


def test_a_valid_score_after_a_refusal_shows_no_error(client, reviewer, result):
    login(client, reviewer)
    _post(client, result, {"kind": "score", "value": "7"}, HTTP_HX_REQUEST="true")
    html = _post(
        client, result, {"kind": "score", "value": "0.25"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    field = _score_input(html, result)
    assert 'value="0.25"' in field and "aria-invalid" not in field
    assert f'id="override-score-error-{result.pk}"' not in html
    result.refresh_from_db()
    assert result.final_score == 0.25


def test_a_stale_page_is_still_said_above_the_panel(client, reviewer, owner, result):
    """What refuses the write rather than the value (someone changed the result) is
    not the field's fault: it stays in the panel's banner."""
    from evalsite.evals.results.verdicts import override_create

    override_create(result=result, user=owner, kind="pass", value=True)
    login(client, reviewer)
    html = _post(
        client,
        result,
        {"kind": "score", "value": "0.1", "version": "0"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert f'id="panel-error-{result.pk}"' in html
    assert f'id="override-score-error-{result.pk}"' not in html


def test_an_outsider_cannot_post_an_override(client, outsider, result):
    login(client, outsider)
    resp = _post(client, result, {"kind": "score", "value": "7"})
    assert resp.status_code == 404
    assert not Override.objects.exists()
