"""The results matrix: one row per item, a cell per run scorer, the explorer's filters,
keyset paging over rows, blind cells masked, and queues built from its filter."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import results_filter
from evalsite.review.models import QueueEntry, ReviewQueue
from tests.conftest import login
from tests.factories import QueueEntryFactory, ReviewQueueFactory
from tests.review.explorer.test_keyset import _bulk_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    # 12 items × 3 scorers; scores cycle 0, .5, 1, None, .5, .5 (judge pass ≥ .5,
    # final = 1 - judge, final pass < .5).
    return _bulk_run(project, n_items=12, n_scorers=3)


def _url(run, **params):
    base = reverse("review:matrix", args=[run.project_id, run.pk])
    return f"{base}?{urlencode(params)}" if params else base


def _rows(response):
    return response.context["matrix"].rows


def _item_indexes(response):
    return [row.item.index for row in _rows(response)]


def test_matrix_has_a_row_per_item_and_a_cell_per_scorer(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run))
    assert response.status_code == 200
    rows = _rows(response)
    assert _item_indexes(response) == list(range(12))
    scorers = list(run.run_scorers.order_by("position"))
    for row in rows:
        assert [c.run_scorer.pk for c in row.cells] == [rs.pk for rs in scorers]
        for cell in row.cells:
            stored = Result.objects.get(
                run=run, item=row.item, run_scorer=cell.run_scorer
            )
            assert cell.result.pk == stored.pk
            assert cell.result.final_score == stored.final_score
    body = response.content.decode()
    assert 'role="grid"' in body and '<th scope="col"' in body
    assert '<th scope="row"' in body
    assert response.context["matrix"].item_count == 12
    assert response.context["matrix"].result_count == 36


def test_matrix_cells_say_the_verdict_in_words_and_open_the_item_at_that_scorer(
    client, reviewer, run
):
    login(client, reviewer)
    result = Result.objects.filter(run=run, judge_score=0.0).first()
    Result.objects.filter(pk=result.pk).update(reviewed=True, overridden=True)
    body = client.get(_url(run)).content.decode()
    link = reverse("review:item", args=[run.project_id, result.pk])
    assert f'href="{link}"' in body
    # Final pass (final score 1.0), judge fail; marks in text, not colour only.
    cell = body[body.index(f'href="{link}"') :].split("</td>")[0]
    assert "✓ pass" in cell and "0 → 1" in cell
    assert "final pass" in cell and "judge fail" in cell
    assert "reviewed" in cell and "overridden" in cell
    errored = Result.objects.filter(run=run, status="error").first()
    link = reverse("review:item", args=[run.project_id, errored.pk])
    assert "⚠ error" in body[body.index(f'href="{link}"') :].split("</td>")[0]


def test_matrix_filter_without_scorer_keeps_items_with_any_match(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run, final="pass"))
    matching = set(
        Result.objects.filter(run=run, final_passed=True).values_list(
            "item__index", flat=True
        )
    )
    assert set(_item_indexes(response)) == matching
    assert (
        response.context["matrix"].result_count
        == Result.objects.filter(run=run, final_passed=True).count()
    )
    # Whole rows: every scorer's cell is there, matching or not.
    assert all(len(row.cells) == 3 for row in _rows(response))


def test_matrix_filter_with_a_scorer_applies_to_that_scorer(client, reviewer, run):
    login(client, reviewer)
    second = run.run_scorers.order_by("position")[1]
    response = client.get(_url(run, run_scorer=second.pk, judge="fail"))
    expected = sorted(
        Result.objects.filter(
            run=run, run_scorer=second, judge_passed=False
        ).values_list("item__index", flat=True)
    )
    assert _item_indexes(response) == expected


@pytest.mark.parametrize("sort", ["score", "-score", "final", "-final", "updated"])
def test_matrix_sorts_rows_by_the_lead_scorer(client, reviewer, run, sort):
    login(client, reviewer)
    first = run.run_scorers.order_by("position").first()
    expected = [
        r.item.index
        for r in results_filter(
            run=run, query=ResultQuery(run_scorer_id=first.pk, sort=sort), user=reviewer
        )
    ]
    response = client.get(_url(run, sort=sort))
    assert _item_indexes(response) == expected
    assert first.name in response.content.decode()


def test_matrix_search_matches_the_item_text(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run, q="question 7"))
    assert _item_indexes(response) == [7]


@pytest.mark.parametrize("sort", ["item", "-score", "updated"])
def test_matrix_pages_by_keyset_without_duplicates_or_gaps(
    client, reviewer, project, sort
):
    big = _bulk_run(project, n_items=60, n_scorers=2)
    login(client, reviewer)
    first = big.run_scorers.order_by("position").first()
    expected = [
        r.item.index
        for r in results_filter(
            run=big, query=ResultQuery(run_scorer_id=first.pk, sort=sort), user=reviewer
        )
    ]
    seen, url = [], _url(big, sort=sort, per_page=25)
    while url:
        response = client.get(url)
        seen += _item_indexes(response)
        url = response.context["pages"]["next"]
    assert seen == expected and len(seen) == 60
    last = client.get(_url(big, sort=sort, per_page=25, last=1))
    assert _item_indexes(last) == expected[-25:]
    back = client.get(last.context["pages"]["previous"])
    assert _item_indexes(back) == expected[10:35]


def test_matrix_htmx_returns_only_the_region(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run, final="fail"), headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="matrix"') and "<html" not in body
    assert body.count("hx-get=") <= body.count("href=")


@pytest.mark.parametrize(
    "params",
    [
        {"min_score": "abc"},
        {"sort": "nope"},
        {"run_scorer": "999999"},
        {"per_page": "7"},
        {"after": "garbage"},
    ],
)
def test_matrix_refuses_bad_filters_with_400(client, reviewer, run, params):
    login(client, reviewer)
    response = client.get(_url(run, **params))
    assert response.status_code == 400
    assert 'id="filter-errors"' in response.content.decode()


def test_matrix_requires_get_and_membership(client, reviewer, outsider, run):
    login(client, reviewer)
    assert client.post(_url(run)).status_code == 405
    login(client, outsider)
    assert client.get(_url(run)).status_code == 404


def test_matrix_of_another_projects_run_is_404(client, reviewer, run, outsider):
    from tests.factories import ProjectFactory

    other = _bulk_run(ProjectFactory(), n_items=2, n_scorers=1)
    login(client, reviewer)
    url = reverse("review:matrix", args=[run.project_id, other.pk])
    assert client.get(url).status_code == 404
    url = reverse("review:matrix", args=[other.project_id, other.pk])
    assert client.get(url).status_code == 404


def test_matrix_and_list_link_to_each_other_with_the_filter(client, reviewer, run):
    login(client, reviewer)
    body = client.get(_url(run, final="fail")).content.decode()
    explorer = reverse("review:explorer", args=[run.project_id, run.pk])
    assert f'href="{explorer}?final=fail"' in body
    body = client.get(f"{explorer}?final=fail").content.decode()
    assert f'href="{_url(run, final="fail")}"' in body
    run_page = reverse("evals:run_detail", args=[run.project_id, run.pk])
    assert f'href="{_url(run)}"' in client.get(run_page).content.decode()


def test_viewer_sees_the_matrix_without_the_queue_control(client, viewer, run):
    login(client, viewer)
    body = client.get(_url(run)).content.decode()
    assert 'id="results-matrix"' in body and 'id="queue-create-form"' not in body


# ------------------------------------------------------------------ blind review


def _blind_queue(run, owner, result):
    queue = ReviewQueueFactory(
        project=run.project, run=run, name="blind", size=1, blind=True, created_by=owner
    )
    QueueEntryFactory(queue=queue, result=result, position=1)
    return queue


def test_matrix_masks_cells_blind_to_the_reviewer(client, owner, reviewer, viewer, run):
    lead = run.run_scorers.order_by("position").first()
    result = (
        Result.objects.filter(run=run, run_scorer=lead, judge_score=0.0)
        .order_by("id")
        .first()
    )
    Result.objects.filter(pk=result.pk).update(judge_score=0.8137, final_score=0.8137)
    _blind_queue(run, owner, result)
    login(client, reviewer)
    response = client.get(_url(run))
    body = response.content.decode()
    assert "0.814" not in body and "0.8137" not in body
    cell = next(
        c
        for row in _rows(response)
        for c in row.cells
        if c.result is not None and c.result.pk == result.pk
    )
    assert cell.blind and cell.result.judge_score is None
    assert "🔒 hidden" in body
    assert response.context["matrix"].blind_hidden == 1
    # A filter on the judge's values never matches it, and a sort never uses it.
    judged = client.get(_url(run, run_scorer=result.run_scorer_id, min_score="0.8"))
    assert _item_indexes(judged) and result.item.index not in _item_indexes(judged)
    by_score = client.get(_url(run, sort="-score"))
    assert result.item.index not in _item_indexes(by_score)
    assert len(_item_indexes(by_score)) == 11
    # A viewer cannot answer the queue, so nothing is blind to them.
    login(client, viewer)
    assert "0.814" in client.get(_url(run)).content.decode()


# ------------------------------------------------------------------ queues from the matrix


def test_queue_from_a_matrix_filter_holds_the_matching_results(client, reviewer, run):
    login(client, reviewer)
    page = client.get(_url(run, final="fail"))
    body = page.content.decode()
    count = page.context["matrix"].result_count
    assert f"Create queue from these {count} results" in body
    assert 'name="back" value="matrix"' in body
    response = client.post(
        reverse("review:queue_create", args=[run.project_id, run.pk]),
        {"source": "filters", "final": "fail", "back": "matrix", "name": "from matrix"},
    )
    queue = ReviewQueue.objects.get(name="from matrix")
    assert response.status_code == 302
    assert response.url == reverse("review:queue", args=[run.project_id, queue.pk])
    queued = set(
        QueueEntry.objects.filter(queue=queue).values_list("result_id", flat=True)
    )
    expected = set(
        Result.objects.filter(run=run, final_passed=False).values_list("id", flat=True)
    )
    assert queued == expected and len(queued) == count


def test_queue_from_a_matrix_filter_that_matches_nothing_goes_back_to_the_matrix(
    client, reviewer, run
):
    login(client, reviewer)
    response = client.post(
        reverse("review:queue_create", args=[run.project_id, run.pk]),
        {"source": "filters", "q": "no such text", "back": "matrix"},
    )
    assert response.status_code == 302
    assert response.url == _url(run, q="no such text")
    assert not ReviewQueue.objects.filter(run=run).exists()
