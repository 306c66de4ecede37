from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evalsite.evals.results.verdicts import result_set_human_pass
from evalsite.review.estimates.services import (
    SampleDesign,
    calibration_sample_create,
)
from evalsite.review.models import ReviewQueue
from tests.conftest import bearer, login
from tests.review.estimates.builders import biased_run, human_truth

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return biased_run(project, n_items=120)


@pytest.fixture
def answered(run, owner):
    queue = calibration_sample_create(
        run=run,
        run_scorer=run.run_scorers.get(),
        user=owner,
        spec=SampleDesign(design="active", budget=40, seed=2),
    )
    for e in queue.entries.select_related("result__item"):
        result_set_human_pass(result=e.result, user=owner, passed=human_truth(e.result))
    return queue


def _url(name, project, run):
    app = "exports" if name == "run_estimates_csv" else "review"
    return reverse(f"{app}:{name}", args=[project.pk, run.pk])


def _run_page_estimates(client, project, run) -> str:
    """The run page, then the estimates fragment it loads (htmx, on load)."""
    page = client.get(reverse("evals:run_detail", args=[project.pk, run.pk]))
    fragment_url = _url("run_estimates", project, run)
    assert f'hx-get="{fragment_url}"' in page.content.decode()
    return client.get(fragment_url).content.decode()


def test_run_page_shows_the_corrected_figures_and_the_labels_behind_them(
    client, project, run, owner, answered
):
    login(client, owner)
    html = _run_page_estimates(client, project, run)
    rs = run.run_scorers.get()
    assert f'id="est-pass_rate-{rs.pk}"' in html
    assert "; corrected " in html and "human labels" in html
    assert f"Uses {answered.size} labels of the calibration sample" in html


def test_run_page_without_a_sample_offers_to_draw_one(client, project, run, owner):
    login(client, owner)
    html = _run_page_estimates(client, project, run)
    assert "No answered calibration sample yet" in html
    assert _url("calibration_create", project, run) in html


def test_calibration_page_shows_the_planner_and_draws_a_sample(
    client, project, run, owner
):
    login(client, owner)
    url = _url("calibration_create", project, run)
    page = client.get(url)
    assert page.status_code == 200
    assert b'id="sample-plan"' in page.content
    rs = run.run_scorers.get()
    response = client.post(
        url,
        {
            "run_scorer": rs.pk,
            "design": "active",
            "budget": 30,
            "floor": 0.1,
            "seed": 5,
            "blind": "on",
        },
    )
    queue = ReviewQueue.objects.get(source=ReviewQueue.Source.CALIBRATION)
    assert response.status_code == 302
    assert response["Location"] == reverse("review:queue", args=[project.pk, queue.pk])
    assert queue.design["seed"] == 5 and queue.blind


def test_calibration_page_plan_is_a_partial_for_htmx(
    client, project, run, owner, answered
):
    login(client, owner)
    rs = run.run_scorers.get()
    response = client.get(
        _url("calibration_create", project, run),
        {"run_scorer": rs.pk, "half_width": 10},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<article id="sample-plan"')
    assert "labels detect a difference of" in html
    assert "<html" not in html


def test_calibration_page_rejects_a_bad_budget(client, project, run, owner):
    login(client, owner)
    rs = run.run_scorers.get()
    response = client.post(
        _url("calibration_create", project, run),
        {"run_scorer": rs.pk, "design": "active", "budget": 0},
    )
    assert response.status_code == 400
    assert not ReviewQueue.objects.exists()


def test_calibration_page_is_refused_to_viewers_and_outsiders(
    client, project, run, viewer, outsider
):
    url = _url("calibration_create", project, run)
    login(client, viewer)
    assert client.get(url).status_code == 403
    login(client, outsider)
    assert client.get(url).status_code == 404
    assert client.post(url, {}).status_code == 404


def test_calibration_page_wrong_method(client, project, run, owner):
    login(client, owner)
    assert client.put(_url("calibration_create", project, run)).status_code == 405
    assert client.post(_url("run_estimates_csv", project, run)).status_code == 405


def test_estimates_csv_has_one_row_per_scorer_and_figure(
    client, project, run, viewer, answered
):
    login(client, viewer)
    response = client.get(_url("run_estimates_csv", project, run))
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["metric"] for r in rows] == ["pass_rate", "mean"]
    assert (
        float(rows[0]["ci_low"])
        <= float(rows[0]["corrected"])
        <= float(rows[0]["ci_high"])
    )
    assert rows[0]["sample_queue_id"] == str(answered.pk)


def test_estimates_csv_is_refused_to_outsiders(client, project, run, outsider):
    login(client, outsider)
    assert client.get(_url("run_estimates_csv", project, run)).status_code == 404


def test_api_estimates(client, run, viewer, outsider, answered):
    response = client.get(f"/api/runs/{run.pk}/estimates", **bearer(viewer))
    assert response.status_code == 200
    (body,) = response.json()
    fig = body["pass_rate"]
    assert body["sample"]["queue_id"] == answered.pk
    assert fig["labels"] == answered.size
    assert fig["ci_low"] <= fig["estimate"] <= fig["ci_high"]
    assert fig["sentence"].startswith("judge ")
    assert (
        client.get(f"/api/runs/{run.pk}/estimates", **bearer(outsider)).status_code
        == 404
    )


def test_run_page_loads_the_estimates_beside_the_aggregates(
    client, project, run, viewer, outsider, answered
):
    login(client, viewer)
    fragment = _run_page_estimates(client, project, run)
    assert "Corrected by a calibration sample" in fragment
    assert f"from {answered.size} human labels" in fragment
    login(client, outsider)
    assert client.get(_url("run_estimates", project, run)).status_code == 404


def test_api_calibration_sample_create(client, run, owner, viewer):
    rs = run.run_scorers.get()
    url = f"/api/runs/{run.pk}/calibration-samples"
    payload = {"run_scorer_id": rs.pk, "design": "stratified", "budget": 20}
    response = client.post(
        url, payload, content_type="application/json", **bearer(owner)
    )
    assert response.status_code == 201
    assert response.json()["design"]["design"] == "stratified"
    refused = client.post(
        url, payload, content_type="application/json", **bearer(viewer)
    )
    assert refused.status_code == 403
    bad = client.post(
        url, {**payload, "budget": 0}, content_type="application/json", **bearer(owner)
    )
    assert bad.status_code == 422


def test_calibration_queue_page_says_how_it_was_drawn(client, project, owner, answered):
    login(client, owner)
    html = client.get(reverse("review:queue", args=[project.pk, answered.pk])).content
    assert b'id="calibration-note"' in html and b"active design, seed 2" in html


def test_explorer_points_to_the_calibration_sample(client, project, run, owner):
    login(client, owner)
    html = client.get(_url("explorer", project, run)).content
    assert _url("calibration_create", project, run).encode() in html


def test_run_page_lists_where_the_unused_labels_come_from(
    client, project, run, owner, answered
):
    from evalsite.review.explorer.schemas import ResultQuery
    from evalsite.review.queues.services import queue_create

    failing = queue_create(
        run=run, user=owner, query=ResultQuery(), source="failing", name="fails"
    )
    for e in failing.entries.select_related("result")[:3]:
        if not e.result.reviewed:
            result_set_human_pass(result=e.result, user=owner, passed=True)
    login(client, owner)
    html = _run_page_estimates(client, project, run).encode()
    rs = run.run_scorers.get()
    assert f'id="est-unused-{rs.pk}"'.encode() in html
    assert b"counted, not used" in html and b"From: fails (" in html


def test_run_page_says_how_many_more_labels_one_answer_needs(
    client, project, run, owner
):
    queue = calibration_sample_create(
        run=run,
        run_scorer=run.run_scorers.get(),
        user=owner,
        spec=SampleDesign(design="uniform", budget=20, seed=1),
    )
    entry = queue.entries.select_related("result__item").first()
    result_set_human_pass(result=entry.result, user=owner, passed=True)
    login(client, owner)
    html = _run_page_estimates(client, project, run).encode()
    assert b"Not enough labels yet" in html and b"1 more needed" in html
