"""Override values and rescore options at the trust boundary: only finite scores within
the scorer's scale, booleans for pass/fail, the analysis's own verdict values, and
range-checked options, refused with a field error (never stored, never a 500)."""

from __future__ import annotations

import math

import pytest
from django.urls import reverse

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Override, Result, RunScorer
from evalsite.evals.results.aggregates import bin_of, run_aggregates
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import override_create, override_revert
from tests.conftest import login
from tests.factories import ProjectFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(project, kinds=["faithfulness", "context_relevance"], n_items=2)


@pytest.fixture
def result(run):
    return Result.objects.filter(run=run, run_scorer__kind="faithfulness").first()


def _post_raw(client, result, raw_json):
    return client.post(
        f"/api/results/{result.pk}/overrides", raw_json, content_type="application/json"
    )


def _post(client, result, body):
    return client.post(
        f"/api/results/{result.pk}/overrides", body, content_type="application/json"
    )


def _rescore(client, run, rs, options, **extra):
    return client.post(
        f"/api/runs/{run.pk}/rescore",
        {"run_scorer_id": rs.pk, "options": options, **extra},
        content_type="application/json",
    )


# ---------------------------------------------------------------- score overrides


@pytest.mark.parametrize(
    "raw_value",
    [
        "1e308",  # finite, but far beyond the scale: stored before, broke every rescore
        "1e999",  # JSON's way to say inf (Python's json reads it as inf)
        "-1e999",
        "NaN",  # Python's json accepts the bare NaN token
        "Infinity",
        "1" + "0" * 400,  # an int no float can hold
        '"NaN"',  # a string: scores are numbers
        '"0.5"',
        '"1e308"',
        "-0.01",
        "1.0000001",
        "true",
        "null",
        "[0.5]",
    ],
)
def test_api_score_override_refuses_anything_but_a_number_within_the_scale(
    client, reviewer, run, result, raw_value
):
    login(client, reviewer)
    resp = _post_raw(client, result, f'{{"kind": "score", "value": {raw_value}}}')
    assert resp.status_code in (400, 422), resp.content
    body = resp.json()
    assert body["detail"] and body["errors"][0]["field"].startswith("value")
    assert not Override.objects.exists()
    result.refresh_from_db()
    assert result.final_score == result.judge_score and result.version == 0
    rs = result.run_scorer
    # Nothing got in the way of the aggregates or a later rescore.
    assert client.get(f"/api/runs/{run.pk}/aggregates").status_code == 200
    assert _rescore(client, run, rs, {"scale": 2}).status_code == 200


def test_api_score_override_of_1e308_is_a_400_and_rescore_keeps_working(
    client, reviewer, owner, run, result
):
    login(client, reviewer)
    resp = _post(client, result, {"kind": "score", "value": 1e308})
    assert resp.status_code == 400
    assert resp.json()["errors"] == [
        {"field": "value", "message": "must be between 0 and 1"}
    ]
    ok = _post(client, result, {"kind": "score", "value": 1})
    assert ok.status_code == 201 and ok.json()["result"]["final_score"] == 1.0
    login(client, owner)  # saving a rescore may be for owners only
    resp = _rescore(client, run, result.run_scorer, {"scale": 10}, save=True)
    assert resp.status_code == 200 and resp.json()["saved"] is True


def test_api_score_override_of_negative_zero_is_stored_as_zero(
    client, reviewer, result
):
    login(client, reviewer)
    resp = _post_raw(client, result, '{"kind": "score", "value": -0.0}')
    assert resp.status_code == 201, resp.content
    override = Override.objects.get()
    assert override.new_value == 0.0 and math.copysign(1, override.new_value) == 1
    result.refresh_from_db()
    assert math.copysign(1, result.final_score) == 1


def test_score_override_range_follows_the_scale_option(project, reviewer):
    run = make_run(
        project, kinds=["faithfulness"], options={"faithfulness": {"scale": 100}}
    )
    result = Result.objects.get(run=run)
    override_create(result=result, user=reviewer, kind="score", value=100)
    assert result.final_score == 100.0 and result.final_passed is True
    override_create(result=result, user=reviewer, kind="score", value=55)
    for bad in (100.5, -1, 1e308, float("nan"), float("inf")):
        with pytest.raises(ApplicationError) as info:
            override_create(result=result, user=reviewer, kind="score", value=bad)
        assert "value" in info.value.field_errors
    assert Override.objects.count() == 2
    assert "between 0 and 100" in str(
        _error_of(result, reviewer, kind="score", value=101).message
    )


def _error_of(result, user, **kwargs):
    with pytest.raises(ApplicationError) as info:
        override_create(result=result, user=user, **kwargs)
    return info.value


# ------------------------------------------------------------ pass and verdicts


@pytest.mark.parametrize(
    "value", ["yes", "true", "pass", "1", 1, 0, "false", "fail", None, 0.0, [True]]
)
def test_api_pass_override_takes_only_booleans(client, reviewer, result, value):
    login(client, reviewer)
    resp = _post(client, result, {"kind": "pass", "value": value})
    assert resp.status_code in (400, 422), resp.content
    assert resp.json()["errors"][0]["field"].startswith("value")
    assert not Override.objects.exists()


def test_api_pass_override_with_a_boolean(client, reviewer, result):
    login(client, reviewer)
    resp = _post(client, result, {"kind": "pass", "value": True})
    assert resp.status_code == 201
    assert resp.json()["result"]["final_passed"] is True


@pytest.mark.parametrize("value", ["pass", "true", "PASS "])
def test_html_form_keeps_its_own_boolean_encoding(client, reviewer, result, value):
    login(client, reviewer)
    url = reverse("review:override_create", args=[result.run.project_id, result.pk])
    resp = client.post(url, {"kind": "pass", "value": value})
    assert resp.status_code == 302
    result.refresh_from_db()
    assert result.final_passed is True and result.pass_overridden


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("faithfulness", "verdicts.0.verdict", "maybe"),
        ("faithfulness", "verdicts.0.verdict", True),
        ("faithfulness", "verdicts.0.verdict", 1),
        ("faithfulness", "verdicts.0.verdict", "yes\x00"),
        ("context_relevance", "evaluations.0.used", "false"),
        ("context_relevance", "evaluations.0.used", 0),
        ("context_relevance", "evaluations.0.relevance", "very high"),
    ],
)
def test_api_verdict_override_takes_only_the_values_the_analysis_allows(
    client, reviewer, run, kind, path, value
):
    result = Result.objects.filter(run=run, run_scorer__kind=kind).first()
    login(client, reviewer)
    resp = _post(client, result, {"kind": "verdict", "path": path, "value": value})
    assert resp.status_code == 400, resp.content
    assert resp.json()["errors"][0]["field"] == "value"
    assert not Override.objects.exists()


def test_api_verdict_override_of_a_boolean_value(client, reviewer, run):
    result = Result.objects.filter(
        run=run, run_scorer__kind="context_relevance"
    ).first()
    login(client, reviewer)
    body = {"kind": "verdict", "path": "evaluations.0.used", "value": False}
    assert _post(client, result, body).status_code == 201


# ------------------------------------------------------------------ who may


def test_viewer_cannot_forge_an_override(client, viewer, result):
    login(client, viewer)
    for body in (
        {"kind": "score", "value": 1e308},
        {"kind": "score", "value": 0.5},
        {"kind": "pass", "value": True},
    ):
        assert _post(client, result, body).status_code == 403
    url = reverse("review:override_create", args=[result.run.project_id, result.pk])
    assert client.post(url, {"kind": "score", "value": "0.5"}).status_code == 403
    assert not Override.objects.exists()


def test_another_projects_result_is_not_found(client, owner, outsider, result):
    other_run = make_run(ProjectFactory(name="Other"), kinds=["faithfulness"])
    other = Result.objects.get(run=other_run)
    login(client, owner)
    for body in ({"kind": "score", "value": 0.5}, {"kind": "score", "value": 1e308}):
        assert _post(client, other, body).status_code == 404
    # The UI route with this project's id and the other project's result id.
    url = reverse("review:override_create", args=[result.run.project_id, other.pk])
    assert client.post(url, {"kind": "score", "value": "0.5"}).status_code == 404
    login(client, outsider)
    assert _post(client, result, {"kind": "score", "value": 0.5}).status_code == 404
    assert not Override.objects.exists()


# -------------------------------------------------------------------- HTML form


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("1e308", "must be between 0 and 1"),
        ("nan", "must be finite"),
        ("inf", "must be finite"),
        ("-0.5", "must be between 0 and 1"),
        ("2", "must be between 0 and 1"),
        ("lots", "Enter a number"),
    ],
)
def test_html_score_form_shows_the_error_and_stores_nothing(
    client, reviewer, result, raw, fragment
):
    login(client, reviewer)
    url = reverse("review:override_create", args=[result.run.project_id, result.pk])
    resp = client.post(url, {"kind": "score", "value": raw}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 200
    html = resp.content.decode()
    # Said at the score field, as a sentence, with what was typed kept there.
    assert 'id="override-score-error-' in html and fragment.lower() in html.lower()
    assert f'value="{raw}" aria-invalid="true"' in html
    # Without JavaScript the page comes back (400) with the same error at its field.
    resp = client.post(url, {"kind": "score", "value": raw})
    assert resp.status_code == 400
    page = resp.content.decode()
    assert 'id="override-score-error-' in page and fragment.lower() in page.lower()
    assert not Override.objects.exists()


# ------------------------------------------------------------------- rescore


@pytest.mark.parametrize(
    ("kind", "raw_options", "field"),
    [
        ("faithfulness", '{"scale": 1e308}', "options.scale"),
        ("faithfulness", '{"scale": 1e999}', "options.scale"),
        ("faithfulness", '{"scale": NaN}', "options.scale"),
        ("faithfulness", '{"scale": "nan"}', "options.scale"),
        ("faithfulness", '{"threshold": -Infinity}', "options.threshold"),
        (
            "context_relevance",
            '{"penalties": {"unused_high_relevance": NaN}}',
            "options.penalties.unused_high_relevance",
        ),
    ],
)
def test_api_rescore_refuses_out_of_range_options(
    client, owner, run, kind, raw_options, field
):
    rs = run.run_scorers.get(kind=kind)
    login(client, owner)
    resp = client.post(
        f"/api/runs/{run.pk}/rescore",
        f'{{"run_scorer_id": {rs.pk}, "options": {raw_options}, "save": true}}',
        content_type="application/json",
    )
    assert resp.status_code == 400, resp.content
    assert resp.json()["errors"][0]["field"] == field
    rs.refresh_from_db()
    assert rs.options["scale"] == 1.0


@pytest.mark.parametrize("bad", ["1e308", "NaN", "-11", "1.5", "-1"])
def test_api_rescore_refuses_out_of_range_factuality_category_scores(
    client, reviewer, project, bad
):
    run = make_run(project, kinds=["factuality"])
    rs = run.run_scorers.get()
    login(client, reviewer)
    resp = client.post(
        f"/api/runs/{run.pk}/rescore",
        f'{{"run_scorer_id": {rs.pk}, "options": '
        f'{{"category_scores": {{"disagree": {bad}}}}}}}',
        content_type="application/json",
    )
    assert resp.status_code == 400, resp.content
    assert resp.json()["errors"][0]["field"] == "options.category_scores.disagree"


def test_rescore_page_shows_range_errors(client, owner, project):
    run = make_run(project, kinds=["factuality"])
    rs = run.run_scorers.get()
    url = reverse("review:rescore", args=[run.project_id, run.pk])
    login(client, owner)
    form = {
        "run_scorer": rs.pk,
        "scale": "1",
        "category_scores__subset": "1",
        "category_scores__superset": "1",
        "category_scores__agree": "1",
        "category_scores__disagree": "1e308",
        "category_scores__differ_but_factual": "1",
        "action": "save",
    }
    resp = client.post(url, form)
    assert resp.status_code == 200
    assert "less than or equal to 1" in resp.content.decode()
    resp = client.post(url, {**form, "scale": "1e308"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'role="alert"' in html and "Scale" in html
    rs.refresh_from_db()
    assert rs.options["category_scores"]["disagree"] == 0.0


# ------------------------------------------------- options saved before the checks


def test_stored_out_of_range_options_give_a_400_that_says_how_to_fix_them(
    client, owner, run, result
):
    RunScorer.objects.filter(pk=result.run_scorer_id).update(
        options={"scale": 1e308, "threshold": 0.5}
    )
    login(client, owner)
    resp = _post(client, result, {"kind": "score", "value": 0.5})
    assert resp.status_code == 400
    assert "what-if rescore" in resp.json()["detail"]
    assert client.get(f"/api/runs/{run.pk}/aggregates").status_code == 200
    html = client.get(
        reverse("review:item", args=[run.project_id, result.pk])
    ).content.decode()
    assert "What is the capital of France" in html
    rescore_page = reverse("review:rescore", args=[run.project_id, run.pk])
    resp = client.get(rescore_page, {"run_scorer": result.run_scorer_id})
    assert resp.status_code == 200
    # The fix: save sane options, then overriding works again.
    assert (
        _rescore(client, run, result.run_scorer, {"scale": 1}, save=True).status_code
        == 200
    )
    assert _post(client, result, {"kind": "score", "value": 0.5}).status_code == 201


def test_undo_with_stored_out_of_range_options_is_a_clean_error(reviewer, result):
    override = override_create(result=result, user=reviewer, kind="pass", value=True)
    RunScorer.objects.filter(pk=result.run_scorer_id).update(
        options={"scale": 1e308, "threshold": 0.5}
    )
    result.run_scorer.refresh_from_db()
    with pytest.raises(ApplicationError, match="what-if rescore"):
        override_revert(override=override, user=reviewer)


def test_aggregates_survive_a_stored_huge_score(run, result):
    """Rows written before the checks: the histogram bins them at the end, no crash."""
    Result.objects.filter(pk=result.pk).update(
        final_score=1e308, overridden=True, score_overridden=True
    )
    assert bin_of(1e308, 1.0) == 9 and bin_of(-1e308, 1.0) == 0
    assert bin_of(float("nan"), 1.0) == 9
    (agg,) = run_aggregates(run_id=run.pk, run_scorer_id=result.run_scorer_id)
    assert agg.overridden == 1


def test_rescore_after_a_valid_override_keeps_it(reviewer, run, result):
    override_create(result=result, user=reviewer, kind="score", value=0.9)
    preview = run_rescore(
        run=run,
        run_scorer=result.run_scorer,
        options={"scale": 10},
        user=reviewer,
        save=True,
    )
    assert preview.saved
    result.refresh_from_db()
    assert result.final_score == 0.9 and result.judge_score == 3.33
