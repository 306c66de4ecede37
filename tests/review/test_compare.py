"""Compare two runs of one dataset: direction-aware regressions first, flips, counts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import login
from tests.factories import DatasetFactory
from tests.review.builders import case_rows, judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(project):
    ds = DatasetFactory(project=project, name="qa", rows=case_rows(4))
    kinds = ["faithfulness", "hallucination"]
    a = make_run(
        project,
        kinds=kinds,
        dataset=ds,
        analyses={
            # faithfulness 1.0 P, 0.5 P, 0 F, 1.0 P
            "faithfulness": [
                judged_claims("yes", "yes"),
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("yes"),
            ],
            # hallucination (lower is better) 0 P, 0 P, 1.0 F, 0.5 P
            "hallucination": [
                judged_claims("no", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
                judged_claims("yes", "no"),
            ],
        },
    )
    b = make_run(
        project,
        kinds=kinds,
        dataset=ds,
        analyses={
            # 0.5 P (−0.5), 0 F (−0.5, pass→fail), 1.0 P (+1, fail→pass), 1.0 (=)
            "faithfulness": [
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
                judged_claims("yes"),
            ],
            # 0.5 (+0.5 worse), 0 (=), 0 (better, fail→pass), 1.0 (worse, pass→fail)
            "hallucination": [
                judged_claims("yes", "no"),
                judged_claims("no", "no"),
                judged_claims("no", "no"),
                judged_claims("yes", "yes"),
            ],
        },
    )
    return a, b


def test_api_orders_regressions_first_per_direction(client, viewer, runs):
    a, b = runs
    login(client, viewer)
    data = client.get(f"/api/runs/{a.pk}/compare/{b.pk}").json()
    faith, hall = data["pairs"]
    assert (faith["regressions"], faith["improvements"], faith["unchanged"]) == (
        2,
        1,
        1,
    )
    assert (faith["pass_to_fail"], faith["fail_to_pass"], faith["missing"]) == (1, 1, 0)
    assert faith["mean_delta"] == pytest.approx(0.0)
    assert (hall["regressions"], hall["improvements"], hall["unchanged"]) == (2, 1, 1)
    assert (hall["pass_to_fail"], hall["fail_to_pass"]) == (1, 1)
    assert [i["item_index"] for i in data["items"]] == [1, 0, 3, 2]
    assert (
        data["items"][0]["pass_flip"] == "pass_to_fail"
        and data["items"][0]["regression"]
    )
    assert data["items"][0]["delta"] == pytest.approx(-0.5)
    assert [i["regression"] for i in data["items"]] == [True, True, False, False]

    data = client.get(
        f"/api/runs/{a.pk}/compare/{b.pk}?scorer_id={hall['scorer_id']}"
    ).json()
    # lower is better: an increase is the regression
    assert [i["item_index"] for i in data["items"]] == [3, 0, 1, 2]
    assert (
        data["items"][1]["delta"] == pytest.approx(0.5)
        and data["items"][1]["regression"]
    )

    only = client.get(
        f"/api/runs/{a.pk}/compare/{b.pk}?only=regressions&limit=1"
    ).json()
    assert only["count"] == 2 and [i["item_index"] for i in only["items"]] == [1]


def test_other_dataset_is_rejected(client, owner, project, runs):
    a, _ = runs
    other = make_run(
        project,
        kinds=["faithfulness"],
        dataset=DatasetFactory(project=project, name="o", rows=case_rows(1)),
    )
    login(client, owner)
    resp = client.get(f"/api/runs/{a.pk}/compare/{other.pk}")
    assert resp.status_code == 400 and resp.json()["errors"][0]["field"] == "other_id"
    page = client.get(
        reverse("review:compare", args=[project.pk]) + f"?a={a.pk}&b={other.pk}"
    )
    assert page.status_code == 400 and "same dataset" in page.content.decode()


def test_compare_page_paginates_and_serves_the_partial(client, viewer, project, runs):
    a, b = runs
    url = reverse("review:compare", args=[project.pk])
    html = (
        login(client, viewer)
        .get(f"{url}?a={a.pk}&b={b.pk}&per_page=2")
        .content.decode()
    )
    assert 'id="compare-summary"' in html and "page 1 of 2" in html
    rows = html.split('id="compare-rows"')[1]
    assert rows.index('data-item="1"') < rows.index('data-item="0"')
    assert 'data-item="3"' not in rows
    partial = client.get(
        f"{url}?a={a.pk}&b={b.pk}&page=2&per_page=2", HTTP_HX_REQUEST="true"
    )
    body = partial.content.decode()
    assert (
        body.lstrip().startswith('<div id="compare-body"') and 'data-item="2"' in body
    )


def test_runs_of_another_project_are_not_found(client, outsider, runs):
    a, b = runs
    login(client, outsider)
    assert client.get(f"/api/runs/{a.pk}/compare/{b.pk}").status_code == 404
    own = outsider.memberships.get().project
    page = client.get(reverse("review:compare", args=[own.pk]) + f"?a={a.pk}&b={b.pk}")
    assert page.status_code == 400  # not runs of this project: the form says so
