from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from evalsite.evals.results.verdicts import override_create, result_accept
from evalsite.review.explorer.forms import ExplorerFilterForm
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import results_filter
from tests.conftest import login
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    # Five items: scores 1.0, 0.67, 0.33, 0.0, 0.5 → pass, pass, fail, fail, pass (threshold 0.5).
    analyses = [
        judged_claims("yes"),
        judged_claims("yes", "yes", "no"),
        judged_claims("yes", "no", "no"),
        judged_claims("no"),
        judged_claims("yes", "no"),
    ]
    run = make_run(
        project,
        kinds=("faithfulness", "hallucination"),
        n_items=5,
        analyses={"faithfulness": analyses},
    )
    item = run.dataset.items.get(index=4)
    item.output = "The Eiffel Tower is in Berlin."
    item.save()
    return run


def _url(run, **params):
    from urllib.parse import urlencode

    base = reverse("review:explorer", args=[run.project_id, run.pk])
    return f"{base}?{urlencode(params)}" if params else base


def _row_ids(response):
    return [r["result"].pk for r in response.context["rows"]]


def test_explorer_lists_item_by_scorer_rows(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run))
    assert response.status_code == 200
    assert response.context["count"] == 10
    body = response.content.decode()
    assert 'id="results-table"' in body
    assert "Faithfulness" in body and "Hallucination" in body
    # Default order: item index, then scorer position.
    rows = [r["result"] for r in response.context["rows"]]
    assert [(r.item.index, r.run_scorer.position) for r in rows[:3]] == [
        (0, 0),
        (0, 1),
        (1, 0),
    ]


def test_explorer_filters_by_scorer_and_final_verdict(client, reviewer, run):
    login(client, reviewer)
    faith = run.run_scorers.get(kind="faithfulness")
    response = client.get(_url(run, run_scorer=faith.pk, final="fail"))
    rows = [r["result"] for r in response.context["rows"]]
    assert sorted(r.item.index for r in rows) == [2, 3]
    assert all(r.run_scorer_id == faith.pk for r in rows)


def test_explorer_filters_score_range_on_final_score(client, reviewer, run):
    login(client, reviewer)
    faith = run.run_scorers.get(kind="faithfulness")
    Result.objects.filter(run_scorer=faith, item__index=0).update(final_score=0.4)
    response = client.get(_url(run, scorer=faith.pk, min_score="0.35", max_score="0.6"))
    rows = [r["result"] for r in response.context["rows"]]
    assert sorted(r.item.index for r in rows) == [0, 4]


def test_explorer_text_search_matches_input_or_output(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run, q="eiffel"))
    rows = [r["result"] for r in response.context["rows"]]
    assert {r.item.index for r in rows} == {4}
    assert len(rows) == 2  # both scorers of that item


def test_explorer_filters_reviewed_overridden_status_and_mine(client, reviewer, run):
    login(client, reviewer)
    first, second, third = Result.objects.filter(run=run).order_by("id")[:3]
    Result.objects.filter(pk=first.pk).update(reviewed=True)
    Result.objects.filter(pk=second.pk).update(overridden=True, assignee=reviewer)
    Result.objects.filter(pk=third.pk).update(
        status=Result.Status.ERROR, final_score=None
    )
    assert _row_ids(client.get(_url(run, reviewed="yes"))) == [first.pk]
    assert _row_ids(client.get(_url(run, overridden="yes"))) == [second.pk]
    assert _row_ids(client.get(_url(run, status="error"))) == [third.pk]
    assert _row_ids(client.get(_url(run, mine="on"))) == [second.pk]
    assert len(_row_ids(client.get(_url(run, reviewed="no")))) == 9


def test_explorer_judge_filter_and_disagreement(client, reviewer, run):
    login(client, reviewer)
    faith = run.run_scorers.get(kind="faithfulness")
    flipped = Result.objects.get(run_scorer=faith, item__index=0)
    assert flipped.judge_passed
    override_create(result=flipped, user=reviewer, kind="pass", value=False)
    accepted = Result.objects.get(run_scorer=faith, item__index=1)
    result_accept(result=accepted, user=reviewer)  # reviewed, agrees: not listed
    judge_fail = _row_ids(client.get(_url(run, run_scorer=faith.pk, judge="fail")))
    assert len(judge_fail) == 2 and flipped.pk not in judge_fail
    assert _row_ids(client.get(_url(run, disagree="on"))) == [flipped.pk]


@pytest.mark.parametrize(
    "sort", ["score", "-score", "final", "-final", "-item", "updated"]
)
def test_explorer_sorts(client, reviewer, run, sort):
    login(client, reviewer)
    faith = run.run_scorers.get(kind="faithfulness")
    rows = [
        r["result"]
        for r in client.get(_url(run, run_scorer=faith.pk, sort=sort)).context["rows"]
    ]
    field = {
        "score": "judge_score",
        "final": "final_score",
        "item": None,
        "updated": "updated_at",
    }[sort.lstrip("-")]
    values = [r.item.index if field is None else getattr(r, field) for r in rows]
    assert values == sorted(values, reverse=sort.startswith("-"))


def test_explorer_page_two_of_many(client, reviewer, project):
    big = make_run(project, n_items=30, kinds=("faithfulness", "hallucination"))
    login(client, reviewer)
    response = client.get(_url(big, per_page=25, page=2))
    assert len(response.context["rows"]) == 25
    # The old page number opens that page; its links go on by cursor.
    assert [r["result"].item.index for r in response.context["rows"]][0] == 12
    pages = response.context["pages"]
    assert "after=" in pages["next"] and "before=" in pages["previous"]


@pytest.mark.parametrize(
    "params",
    [
        {"min_score": "abc"},
        {"judge": "maybe"},
        {"sort": "drop table"},
        {"min_score": "0.9", "max_score": "0.1"},
        {"scorer": "999999"},
        {"run_scorer": "999999"},
        {"scorer_id": "1"},
        {"per_page": "7"},
        {"page": "0"},
        {"q": "x" * 201},
    ],
)
def test_explorer_rejects_invalid_filters_with_400(client, reviewer, run, params):
    login(client, reviewer)
    response = client.get(_url(run, **params))
    assert response.status_code == 400
    assert 'id="filter-errors"' in response.content.decode()


def test_explorer_htmx_returns_only_the_partial(client, reviewer, run):
    login(client, reviewer)
    response = client.get(_url(run, final="fail"), headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="explorer"')
    assert "<html" not in body


def test_explorer_links_are_htmx_with_href_and_push_url(client, reviewer, project):
    big = make_run(project, n_items=30)
    login(client, reviewer)
    body = client.get(_url(big, per_page=25)).content.decode()
    assert 'id="next-page"' in body
    assert 'hx-push-url="true"' in body
    # Every hx-get has a plain href too (works without JS).
    assert body.count("hx-get=") <= body.count("href=")


def test_explorer_requires_get(client, reviewer, run):
    login(client, reviewer)
    assert client.post(_url(run)).status_code == 405


def test_explorer_outsider_gets_404(client, outsider, run):
    login(client, outsider)
    assert client.get(_url(run)).status_code == 404


def test_explorer_run_from_another_project_url_is_404(client, reviewer, outsider, run):
    other_project = outsider.memberships.get().project
    login(client, reviewer)
    url = reverse("review:explorer", args=[other_project.pk, run.pk])
    assert client.get(url).status_code == 404


def test_explorer_viewer_sees_rows_but_no_queue_controls(client, viewer, reviewer, run):
    login(client, viewer)
    body = client.get(_url(run)).content.decode()
    assert 'id="results-table"' in body
    assert 'id="queue-create-form"' not in body
    login(client, reviewer)
    assert 'id="queue-create-form"' in client.get(_url(run)).content.decode()


def test_explorer_escapes_item_text(client, reviewer, run):
    item = run.dataset.items.get(index=0)
    item.output = "<script>alert(1)</script>"
    item.save()
    login(client, reviewer)
    body = client.get(_url(run)).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;" in body


def test_explorer_query_count_does_not_grow_with_rows(
    client, reviewer, project, django_assert_max_num_queries
):
    big = make_run(project, n_items=40, kinds=("faithfulness", "hallucination"))
    Result.objects.filter(run=big).update(assignee=reviewer)
    login(client, reviewer)
    # 12, and the navigation's "waiting for you" count (2, whatever the rows: the
    # project's open queues and runs, then the counts).
    with django_assert_max_num_queries(14):
        response = client.get(_url(big, per_page=50))
    assert len(response.context["rows"]) == 50


def test_results_filter_is_shared_by_form_and_api_shapes(reviewer, run):
    form = ExplorerFilterForm(
        {"final": "fail", "reviewed": "no"}, run_scorers=list(run.run_scorers.all())
    )
    assert form.is_valid(), form.errors
    assert form.query == ResultQuery(passed=False, reviewed=False)
    qs = results_filter(run=run, query=form.query, user=reviewer)
    assert set(qs.values_list("final_passed", "reviewed").distinct()) == {
        (False, False)
    }


def test_explorer_count_stops_at_the_cap(client, reviewer, project, monkeypatch):
    from evalsite.review.explorer import selectors as explorer

    monkeypatch.setattr(explorer, "COUNT_CAP", 30)
    big = make_run(project, n_items=20, kinds=("faithfulness", "hallucination"))
    login(client, reviewer)
    response = client.get(_url(big, per_page=25))
    assert response.context["count_capped"] is True
    assert "30+</strong> results" in response.content.decode()
    # The cap stops the count, not the paging: the last page is still there.
    assert response.context["pages"]["last"] is not None
    last = client.get(response.context["pages"]["last"])
    assert len(last.context["rows"]) == 25 and last.context["pages"]["next"] is None
    # Under the cap the count is exact.
    small = client.get(_url(big, per_page=25, run_scorer=big.run_scorers.first().pk))
    assert small.context["count_capped"] is False
    assert small.context["count"] == 20


def test_result_query_reads_explorer_and_api_spellings_alike(run):
    scorer = run.run_scorers.first()
    explorer = ResultQuery.from_querydict(
        {
            "scorer": str(scorer.pk),
            "judge": "fail",
            "final": "pass",
            "reviewed": "no",
            "mine": "on",
            "disagree": "on",
            "q": "  tower ",
            "sort": "-score",
        },
        run_scorers=run.run_scorers.all(),
    )
    api = ResultQuery.from_querydict(
        {
            "run_scorer_id": str(scorer.pk),
            "judge_passed": "false",
            "passed": "true",
            "reviewed": "false",
            "assignee": "me",
            "disagree": "true",
            "q": "tower",
            "sort": "-score",
        }
    )
    assert explorer == api
    # Links keep the explorer's spelling, so bookmarked URLs stay the same.
    assert ResultQuery.from_querydict(explorer.to_querydict()) == explorer
    assert explorer.to_querydict()["final"] == "pass"


def test_result_query_names_the_parameter_as_sent(run):
    from evalsite.review.explorer.schemas import ResultQueryError

    for params, name in [
        ({"final": "maybe"}, "final"),
        ({"passed": "maybe"}, "passed"),
        ({"scorer": "999999"}, "scorer"),
        ({"run_scorer": "999999"}, "run_scorer"),
        ({"run_scorer_id": "999999"}, "run_scorer_id"),
        ({"scorer_id": "1"}, "scorer_id"),
        ({"min_score": "0.9", "max_score": "0.1"}, "max_score"),
    ]:
        with pytest.raises(ResultQueryError) as info:
            ResultQuery.from_querydict(params, run_scorers=run.run_scorers.all())
        assert list(info.value.field_errors) == [name]


def test_result_query_stores_the_queue_filter_keys():
    query = ResultQuery(run_scorer_id=3, passed=False, assignee="me", disagree=False)
    assert query.to_json() == {"run_scorer": 3, "final_passed": False, "mine": True}
    assert not ResultQuery(sort="-score").is_filtered()
    assert ResultQuery(passed=False).is_filtered()


def test_explorer_page_accepts_the_api_parameter_names(client, reviewer, run):
    login(client, reviewer)
    html = client.get(_url(run, final="fail"))
    api = client.get(_url(run, passed="false"))
    assert api.status_code == 200
    assert _row_ids(api) == _row_ids(html) != []
