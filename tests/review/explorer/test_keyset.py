"""Keyset paging of a run's results: every sort the explorer offers, walked forwards
and backwards, must give exactly the rows of one ORDER BY, with no duplicates and no
gaps, whatever the ties, filters and page size."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from evalsite.datasets.models import Item
from evalsite.evals.models import Result
from evalsite.review.explorer.keyset import (
    SEGMENTS,
    CursorError,
    cursor_decode,
    cursor_of,
    keyset_page,
)
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import COUNT_CAP, SORTS, results_filter
from tests.conftest import bearer, login
from tests.factories import DatasetFactory, RunFactory, RunScorerFactory

pytestmark = pytest.mark.django_db

# Few distinct values, so most rows tie on the sort value (and some have none).
SCORES = [0.0, 0.5, 1.0, None, 0.5, 0.5]


def _bulk_run(project, *, n_items, n_scorers=2, scores=SCORES):
    """A run of `n_items` × `n_scorers` results made by bulk_create, with scores
    cycling through `scores` and update times in three groups (ties again)."""
    dataset = DatasetFactory(project=project)
    Item.objects.bulk_create(
        Item(dataset=dataset, index=i, input=f"question {i}", output=f"answer {i}")
        for i in range(n_items)
    )
    run = RunFactory(project=project, dataset=dataset, total=n_items * n_scorers)
    scorers = [RunScorerFactory(run=run, position=p) for p in range(n_scorers)]
    item_ids = list(dataset.items.order_by("index").values_list("id", flat=True))
    rows = []
    for n, item_id in enumerate(item_ids):
        for p, rs in enumerate(scorers):
            score = scores[(n + p) % len(scores)]
            rows.append(
                Result(
                    run=run,
                    item_id=item_id,
                    run_scorer=rs,
                    status="ok" if score is not None else "error",
                    judge_score=score,
                    final_score=None if score is None else 1 - score,
                    judge_passed=None if score is None else score >= 0.5,
                    final_passed=None if score is None else score < 0.5,
                )
            )
    Result.objects.bulk_create(rows, batch_size=2000)
    base = timezone.now()
    for group in range(3):
        Result.objects.filter(run=run, id__in=[r.pk for r in rows[group::3]]).update(
            updated_at=base + dt.timedelta(seconds=group)
        )
    return run


@pytest.fixture
def run(project):
    return _bulk_run(project, n_items=23)


def _expected(qs, sort):
    return list(qs.order_by(*SORTS[sort]).values_list("id", flat=True))


def _walk_forward(qs, sort, limit):
    ids, after, pages = [], None, []
    while True:
        page = keyset_page(qs, sort=sort, limit=limit, after=after)
        pages.append(page)
        ids += page.ids
        if not page.has_next:
            return ids, pages
        after = cursor_decode(page.next_cursor, sort=sort)


def _walk_backward(qs, sort, limit):
    page = keyset_page(qs, sort=sort, limit=limit, last_page=True)
    chunks, pages = [page.ids], [page]
    while page.has_previous:
        before = cursor_decode(page.previous_cursor, sort=sort, field="before")
        page = keyset_page(qs, sort=sort, limit=limit, before=before)
        chunks.insert(0, page.ids)
        pages.insert(0, page)
    return [pk for chunk in chunks for pk in chunk], pages


@pytest.mark.parametrize("sort", list(SORTS))
@pytest.mark.parametrize("limit", [1, 5, 7, 46])
def test_keyset_walks_every_sort_without_duplicates_or_gaps(run, reviewer, sort, limit):
    qs = results_filter(run=run, query=ResultQuery(sort=sort), user=reviewer)
    expected = _expected(qs, sort)
    assert len(expected) == 46
    forward, pages = _walk_forward(qs, sort, limit)
    assert forward == expected
    assert not pages[0].has_previous and not pages[-1].has_next
    assert all(len(p.ids) == limit for p in pages[:-1])
    backward, back_pages = _walk_backward(qs, sort, limit)
    assert backward == expected
    assert not back_pages[0].has_previous and not back_pages[-1].has_next


def test_every_sort_the_ui_offers_has_keyset_segments():
    assert set(SEGMENTS) == set(SORTS)


@pytest.mark.parametrize("sort", ["score", "-score", "final", "-final", "updated"])
def test_keyset_with_filters_combined(run, reviewer, sort):
    first = run.run_scorers.order_by("position").first()
    query = ResultQuery(
        run_scorer_id=first.pk,
        judge_passed=True,
        max_score=0.5,
        q="question",
        sort=sort,
    )
    qs = results_filter(run=run, query=query, user=reviewer)
    expected = _expected(qs, sort)
    assert 3 < len(expected) < 23
    assert _walk_forward(qs, sort, 2)[0] == expected
    assert _walk_backward(qs, sort, 2)[0] == expected


def test_keyset_page_size_boundary_has_no_empty_last_page(project, reviewer):
    run = _bulk_run(project, n_items=10, n_scorers=2)  # 20 results, pages of 10
    qs = results_filter(run=run, query=ResultQuery(), user=reviewer)
    first = keyset_page(qs, sort="item", limit=10)
    assert first.has_next and not first.has_previous
    second = keyset_page(
        qs, sort="item", limit=10, after=cursor_decode(first.next_cursor, sort="item")
    )
    assert len(second.ids) == 10 and not second.has_next and second.has_previous
    assert second.next_cursor is None
    last = keyset_page(qs, sort="item", limit=10, last_page=True)
    assert last.ids == second.ids and last.has_previous and not last.has_next


def test_keyset_single_page_and_empty_filter(run, reviewer):
    qs = results_filter(run=run, query=ResultQuery(), user=reviewer)
    whole = keyset_page(qs, sort="-final", limit=100)
    assert len(whole.ids) == 46 and not whole.has_next and not whole.has_previous
    empty = keyset_page(qs.filter(pk__lt=0), sort="score", limit=10)
    assert empty.ids == [] and empty.next_cursor is None


def test_cursor_of_a_row_continues_where_the_walk_would(run, reviewer):
    qs = results_filter(run=run, query=ResultQuery(sort="score"), user=reviewer)
    expected = _expected(qs, "score")
    for at in (0, 17, 40):
        row = Result.objects.get(pk=expected[at])
        page = keyset_page(
            qs, sort="score", limit=3, after=cursor_of(row, sort="score")
        )
        assert page.ids == expected[at + 1 : at + 4]


@pytest.mark.parametrize(
    "token",
    ["", "garbage!", "W10", "WzAsWzFdXQ", "Wzk5LFsxLDJdXQ", "WzAsWyJ4IiwxXV0"],
)
def test_bad_cursors_are_refused(token):
    with pytest.raises(CursorError):
        cursor_decode(token, sort="score")


def test_a_cursor_of_another_sort_is_refused(run, reviewer):
    qs = results_filter(run=run, query=ResultQuery(sort="updated"), user=reviewer)
    token = keyset_page(qs, sort="updated", limit=5).next_cursor
    with pytest.raises(CursorError):
        cursor_decode(token, sort="item")


# ------------------------------------------------------------------ the explorer


def _explorer(run, **params):
    base = reverse("review:explorer", args=[run.project_id, run.pk])
    return f"{base}?{urlencode(params)}" if params else base


def _ids(response):
    return [row["result"].pk for row in response.context["rows"]]


def test_explorer_pages_by_cursor_links(client, reviewer, project):
    run = _bulk_run(project, n_items=30, n_scorers=2)
    login(client, reviewer)
    expected = _expected(
        results_filter(run=run, query=ResultQuery(sort="-score"), user=reviewer),
        "-score",
    )
    seen, url = [], _explorer(run, sort="-score", per_page=25)
    while url:
        response = client.get(url)
        assert response.status_code == 200
        seen += _ids(response)
        url = response.context["pages"]["next"]
    assert seen == expected
    # Last is the final 25 rows; Previous from it the 25 before; First the first.
    last = client.get(_explorer(run, sort="-score", per_page=25, last=1))
    assert _ids(last) == expected[-25:]
    assert last.context["pages"]["next"] is None
    previous = client.get(last.context["pages"]["previous"])
    assert _ids(previous) == expected[10:35]
    assert _ids(client.get(previous.context["pages"]["first"])) == expected[:25]


@pytest.mark.parametrize(
    "params",
    [
        {"after": "not-a-cursor"},
        {"before": "W10"},
        {"after": "WzAsWzFdXQ", "before": "WzAsWzFdXQ"},
        {"after": "x" * 201},
    ],
)
def test_explorer_refuses_bad_cursors_with_400(client, reviewer, run, params):
    login(client, reviewer)
    response = client.get(_explorer(run, **params))
    assert response.status_code == 400
    assert 'id="filter-errors"' in response.content.decode()


def test_explorer_reaches_past_ten_thousand_results(client, reviewer, project):
    run = _bulk_run(project, n_items=COUNT_CAP + 60, n_scorers=1, scores=[0.5])
    login(client, reviewer)
    last = client.get(_explorer(run, per_page=200, last=1))
    assert last.status_code == 200
    body = last.content.decode()
    assert "10000+" in body
    indexes = [row["result"].item.index for row in last.context["rows"]]
    assert indexes == list(range(COUNT_CAP + 60 - 200, COUNT_CAP + 60))
    # Walking on from page 50 (results 9,801–10,000) passes the count cap.
    qs = results_filter(run=run, query=ResultQuery(), user=reviewer)
    row = Result.objects.get(run=run, item__index=COUNT_CAP - 1)
    after = cursor_of(row, sort="item").encode()
    response = client.get(_explorer(run, per_page=200, after=after))
    assert [r["result"].item.index for r in response.context["rows"]] == list(
        range(COUNT_CAP, COUNT_CAP + 60)
    )
    assert response.context["pages"]["next"] is None
    assert qs.count() == COUNT_CAP + 60


def test_explorer_old_page_numbers_still_open_that_page(client, reviewer, project):
    run = _bulk_run(project, n_items=30, n_scorers=2)
    login(client, reviewer)
    expected = _expected(
        results_filter(run=run, query=ResultQuery(), user=reviewer), "item"
    )
    response = client.get(_explorer(run, per_page=25, page=2))
    assert _ids(response) == expected[25:50]
    assert _ids(client.get(response.context["pages"]["next"])) == expected[50:]


# ------------------------------------------------------------------ the API


def test_api_pages_by_cursor_through_every_result(client, reviewer, project):
    run = _bulk_run(project, n_items=15, n_scorers=2)
    expected = _expected(
        results_filter(run=run, query=ResultQuery(sort="final"), user=reviewer),
        "final",
    )
    headers = bearer(reviewer)
    url = f"/api/runs/{run.pk}/results"
    seen, params = [], {"sort": "final", "limit": 4}
    while True:
        data = client.get(url, params, **headers).json()
        assert data["count"] == 30
        seen += [row["id"] for row in data["items"]]
        if not data["next"]:
            break
        params = {"sort": "final", "limit": 4, "after": data["next"]}
    assert seen == expected
    back = client.get(
        url, {"sort": "final", "limit": 4, "before": data["previous"]}, **headers
    ).json()
    assert [row["id"] for row in back["items"]] == expected[24:28]


def test_api_offset_still_pages_and_gives_a_cursor(client, reviewer, run):
    headers = bearer(reviewer)
    expected = _expected(
        results_filter(run=run, query=ResultQuery(), user=reviewer), "item"
    )
    data = client.get(
        f"/api/runs/{run.pk}/results", {"limit": 10, "offset": 7}, **headers
    ).json()
    assert [row["id"] for row in data["items"]] == expected[7:17]
    after = client.get(
        f"/api/runs/{run.pk}/results",
        {"limit": 10, "after": data["next"]},
        **headers,
    ).json()
    assert [row["id"] for row in after["items"]] == expected[17:27]


@pytest.mark.parametrize(
    "params",
    [
        {"after": "garbage"},
        {"after": "WzAsWzFdXQ", "offset": 5},
        {"after": "WzAsWzFdXQ", "before": "WzAsWzFdXQ"},
    ],
)
def test_api_refuses_bad_cursors(client, reviewer, run, params):
    response = client.get(f"/api/runs/{run.pk}/results", params, **bearer(reviewer))
    assert response.status_code in (400, 422)
    assert "detail" in response.json()


def test_keyset_order_matches_sorts_on_nulls(run, reviewer):
    # NULL scores come last whatever the direction, as SORTS puts them.
    for sort in ("score", "-score"):
        qs = results_filter(run=run, query=ResultQuery(sort=sort), user=reviewer)
        ids, _ = _walk_forward(qs, sort, 4)
        scores = list(
            Result.objects.filter(pk__in=ids)
            .annotate(s=F("judge_score"))
            .values_list("pk", "s")
        )
        by_pk = dict(scores)
        ordered = [by_pk[pk] for pk in ids]
        n_null = sum(v is None for v in ordered)
        assert n_null and all(v is None for v in ordered[-n_null:])
