"""Paging through every sort of the explorer: each result on exactly one page, in the
sort's order, ties broken by id and empty scores last in both directions.

The score and update-time sorts are served by indexes in exactly that order
(review migration 0019_result_keyset_indexes); these boundaries are what they must keep.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from evalsite.evals.models import Result
from evalsite.review.explorer.selectors import SORTS
from tests.conftest import login
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

PER_PAGE = 25


@pytest.fixture
def run(project):
    run = make_run(project, kinds=("faithfulness", "hallucination"), n_items=31)
    ids = list(
        Result.objects.filter(run=run).order_by("id").values_list("id", flat=True)
    )
    now = timezone.now()
    # Few distinct scores (many ties across page boundaries), every 7th result an
    # error with no score, update times with ties too, and every third result judged
    # several times with a tied split.
    for n, pk in enumerate(ids):
        error = n % 7 == 3
        score = None if error else (n % 4) / 4
        Result.objects.filter(pk=pk).update(
            status=Result.Status.ERROR if error else Result.Status.OK,
            judge_score=score,
            final_score=None if score is None else 1 - score,
            updated_at=now - timedelta(minutes=n % 5),
            judge_uncertainty=None if n % 3 else (n % 2) / 3,
        )
    return run


def _pages(client, run, sort: str) -> list[int]:
    base = reverse("review:explorer", args=[run.project_id, run.pk])
    seen: list[int] = []
    params = {"sort": sort, "per_page": PER_PAGE}
    while True:
        response = client.get(f"{base}?{urlencode(params)}")
        assert response.status_code == 200
        rows = [r["result"].pk for r in response.context["rows"]]
        assert rows, f"a page of {sort} after {params.get('after')} is empty"
        seen += rows
        cursor = response.context["page"].next_cursor
        if cursor is None:
            return seen
        params["after"] = cursor


def _expected(run, sort: str) -> list[int]:
    rows = list(
        Result.objects.filter(run=run).values(
            "id",
            "item_id",
            "run_scorer_id",
            "judge_score",
            "final_score",
            "updated_at",
            "judge_uncertainty",
        )
    )
    key = sort.lstrip("-")
    desc = sort.startswith("-")
    if key == "item":
        rows.sort(key=lambda r: (r["item_id"], r["run_scorer_id"]), reverse=desc)
    elif key == "updated":
        rows.sort(key=lambda r: (r["updated_at"], r["id"]), reverse=desc)
    elif key == "uncertainty":
        # The split in the sort's direction, then by item; judged once come last.
        split = [r for r in rows if r["judge_uncertainty"] is not None]
        once = [r for r in rows if r["judge_uncertainty"] is None]
        sign = -1 if desc else 1
        split.sort(key=lambda r: (sign * r["judge_uncertainty"], r["item_id"], r["id"]))
        once.sort(key=lambda r: (r["item_id"], r["id"]))
        rows = split + once
    else:
        column = {"score": "judge_score", "final": "final_score"}[key]
        scored = [r for r in rows if r[column] is not None]
        empty = [r for r in rows if r[column] is None]
        # The score and then the id in the sort's direction (one index read backwards
        # serves a descending sort); empty scores last, by id in the same direction.
        scored.sort(key=lambda r: (r[column], r["id"]), reverse=desc)
        empty.sort(key=lambda r: r["id"], reverse=desc)
        rows = scored + empty
    return [r["id"] for r in rows]


@pytest.mark.parametrize("sort", sorted(SORTS))
def test_every_result_on_exactly_one_page_in_the_sorts_order(
    client, reviewer, run, sort
):
    login(client, reviewer)
    seen = _pages(client, run, sort)
    assert len(seen) == len(set(seen)) == 62
    assert seen == _expected(run, sort)
