"""A judge asked several times: the explorer filters and sorts by its split, a queue
built that way puts the most uncertain first, the item page shows the answers, and a
blind reviewer sees none of them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.queues.services import queue_create
from tests.conftest import bearer, login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

SPLITS = [None, 0.0, 1 / 3, 0.5, 1 / 3, 0.0]


def _answers(split):
    if split is None:
        return None
    disagree = round(split * 6)  # of 6: 0, 2 or 3
    return [{"score": 0.0, "passed": False}] * disagree + [
        {"score": 1.0, "passed": True}
    ] * (6 - disagree)


@pytest.fixture
def run(project):
    run = make_run(project, n_items=len(SPLITS))
    for result, split in zip(
        Result.objects.filter(run=run).order_by("item_id"), SPLITS, strict=True
    ):
        result.judge_uncertainty = split
        result.judge_answers = _answers(split)
        result.save(update_fields=["judge_uncertainty", "judge_answers"])
    return run


def test_a_queue_sorted_by_uncertainty_puts_the_most_uncertain_first(run, owner):
    queue = queue_create(
        run=run, user=owner, query=ResultQuery(sort="-uncertainty"), name="unsure"
    )
    order = [
        e.result.judge_uncertainty
        for e in queue.entries.select_related("result").order_by("position")
    ]
    assert order == [0.5, 1 / 3, 1 / 3, 0.0, 0.0, None]
    assert queue.filters == {"sort": "-uncertainty"}


def test_the_uncertain_filter_keeps_only_split_answers(run, owner, client):
    queue = queue_create(
        run=run, user=owner, query=ResultQuery(uncertain=True), name="split"
    )
    assert sorted(e.result.judge_uncertainty for e in queue.entries.all()) == [
        1 / 3,
        1 / 3,
        0.5,
    ]
    assert queue.filters == {"uncertain": True}
    login(client, owner)
    url = reverse("review:explorer", args=[run.project_id, run.pk])
    page = client.get(f"{url}?uncertain=on&sort=-uncertainty")
    assert page.status_code == 200
    api = client.get(
        f"/api/runs/{run.pk}/results?uncertain=true&sort=-uncertainty", **bearer(owner)
    ).json()
    assert api["count"] == 3


def test_the_item_page_and_api_show_the_answers_and_split(run, owner, client):
    result = Result.objects.get(run=run, judge_uncertainty=0.5)
    login(client, owner)
    body = client.get(
        reverse("review:item", args=[run.project_id, result.pk])
    ).content.decode()
    assert "Judge asked 6 times" in body
    assert "3 pass – 3 fail" in body
    assert 'uncertainty <strong class="judge-uncertainty">0.50</strong>' in body
    api = client.get(f"/api/results/{result.pk}", **bearer(owner)).json()
    assert api["judge_uncertainty"] == 0.5
    assert len(api["judge_answers"]) == 6
    assert sum(a["passed"] for a in api["judge_answers"]) == 3
