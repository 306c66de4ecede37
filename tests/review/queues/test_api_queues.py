"""REST API: results list with filters, comments and queues."""

from __future__ import annotations

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Comment, Result
from evalsite.evals.results.verdicts import (
    override_create,
    result_accept,
    result_set_human_pass,
)
from evalsite.review.models import ReviewQueue
from tests.conftest import bearer
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    analyses = [
        judged_claims("yes"),
        judged_claims("no"),
        judged_claims("yes", "no", "no"),
        judged_claims("yes", "yes", "no"),
    ]
    run = make_run(
        project,
        n_items=4,
        kinds=("faithfulness", "hallucination"),
        analyses={"faithfulness": analyses},
    )
    item = run.dataset.items.get(index=3)
    item.input = "Where is the Louvre?"
    item.save()
    return run


def _results(client, run, user, **params):
    return client.get(f"/api/runs/{run.pk}/results", params, **bearer(user))


# ------------------------------------------------------------------ results list


def test_results_list_paginates_with_count(client, reviewer, run):
    response = _results(client, run, reviewer, limit=3, offset=0)
    data = response.json()
    assert response.status_code == 200
    assert data["count"] == 8
    assert len(data["items"]) == 3
    first = data["items"][0]
    assert first["item_index"] == 0 and first["kind"] == "faithfulness"
    assert set(first) >= {
        "id",
        "run_scorer_id",
        "judge_score",
        "final_score",
        "judge_passed",
        "final_passed",
        "reviewed",
        "overridden",
        "assignee",
    }
    rest = _results(client, run, reviewer, limit=10, offset=3).json()["items"]
    assert len(rest) == 5
    assert {r["id"] for r in rest}.isdisjoint(r["id"] for r in data["items"])


def test_results_list_filters(client, reviewer, run):
    faith = run.run_scorers.get(kind="faithfulness")

    def ids(**p):
        return [
            r["item_index"]
            for r in _results(client, run, reviewer, **p).json()["items"]
        ]

    assert ids(run_scorer_id=faith.pk, passed="false") == [1, 2]
    assert ids(run_scorer_id=faith.pk, judge_passed="true") == [0, 3]
    assert ids(run_scorer_id=faith.pk, min_score=0.3, max_score=0.7) == [2, 3]
    assert ids(q="louvre") == [3, 3]
    assert ids(run_scorer_id=faith.pk, sort="-final") == [0, 3, 2, 1]
    results = list(run.results.filter(run_scorer=faith).order_by("item__index"))
    result_accept(result=results[0], user=reviewer)
    override_create(
        result=results[1],
        user=reviewer,
        kind="verdict",
        path="verdicts.0.verdict",
        value="yes",
    )
    Result.objects.filter(pk=results[2].pk).update(
        status=Result.Status.ERROR, assignee=reviewer
    )
    assert ids(reviewed="true") == [0, 1]
    assert ids(overridden="true") == [1]
    assert ids(status="error") == [2]
    assert ids(assignee="me") == [2]
    assert ids(disagree="true") == [1]


@pytest.mark.parametrize(
    "params",
    [
        {"status": "weird"},
        {"min_score": "x"},
        {"min_score": 0.9, "max_score": 0.1},
        {"sort": "nope"},
        {"assignee": "bob"},
        {"limit": 0},
        {"limit": 5000},
        {"offset": -1},
    ],
)
def test_results_list_rejects_bad_filters_with_422(client, reviewer, run, params):
    response = _results(client, run, reviewer, **params)
    assert response.status_code == 422
    assert response.json()["detail"].startswith("Invalid input")


def test_results_list_isolation_and_auth(client, run, outsider, viewer):
    assert client.get(f"/api/runs/{run.pk}/results").status_code == 401
    assert _results(client, run, outsider).status_code == 404
    assert _results(client, run, viewer).status_code == 200
    assert (
        client.post(f"/api/runs/{run.pk}/results", **bearer(viewer)).status_code == 405
    )


def test_results_list_query_count_is_constant(
    client, reviewer, run, django_assert_max_num_queries
):
    headers = bearer(reviewer)
    # 7, and 1 for the run's results blind to the reviewer (review.selectors.blind).
    with django_assert_max_num_queries(8):
        response = client.get(f"/api/runs/{run.pk}/results", {"limit": 100}, **headers)
    assert len(response.json()["items"]) == 8


# ------------------------------------------------------------------ comments


def test_comments_post_and_list(client, reviewer, viewer, run):
    result = run.results.first()
    url = f"/api/results/{result.pk}/comments"
    response = client.post(
        url,
        {"body": "Looks right"},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert response.status_code == 201
    assert (
        response.json()["user"] == "rita" and response.json()["body"] == "Looks right"
    )
    listed = client.get(url, **bearer(viewer)).json()
    assert listed["count"] == 1 and listed["items"][0]["body"] == "Looks right"


def test_comments_api_errors_and_permissions(client, reviewer, viewer, outsider, run):
    result = run.results.first()
    url = f"/api/results/{result.pk}/comments"

    def post(user, body):
        return client.post(url, body, content_type="application/json", **bearer(user))

    assert post(viewer, {"body": "x"}).status_code == 403
    assert post(outsider, {"body": "x"}).status_code == 404
    assert client.get(url, **bearer(outsider)).status_code == 404
    assert post(reviewer, {"body": ""}).status_code == 422
    assert post(reviewer, {"body": "x", "extra": 1}).status_code == 422
    assert post(reviewer, {"body": "   "}).status_code == 400
    assert not Comment.objects.exists()


# ------------------------------------------------------------------ queues


def test_queue_create_api_with_round_robin_and_get(
    client, project, owner, reviewer, run
):
    MembershipFactory(
        project=project, user=UserFactory(username="sam"), role=Role.REVIEWER
    )
    response = client.post(
        f"/api/runs/{run.pk}/queues",
        {
            "name": "Failing faithfulness",
            "filters": {"passed": False},
            "assign_round_robin": True,
        },
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["name"] == "Failing faithfulness"
    assert data["filters"] == {"final_passed": False}
    assert (
        data["size"]
        == len(data["result_ids"])
        == Result.objects.filter(run=run, final_passed=False).count()
    )
    assert sum(data["assignees"].values()) == data["size"]
    assert set(data["assignees"]) == {"rita", "sam"}
    again = client.get(f"/api/queues/{data['id']}", **bearer(reviewer)).json()
    assert again["result_ids"] == data["result_ids"] and again["reviewed"] == 0


def test_queue_create_api_stratified_and_blind(client, reviewer, run):
    response = client.post(
        f"/api/runs/{run.pk}/queues",
        {"blind": True, "stratified": {"pass_share": 0.5, "seed": 4}},
        content_type="application/json",
        **bearer(reviewer),
    )
    data = response.json()
    assert response.status_code == 201, data
    assert data["blind"] is True and data["source"] == "stratified"
    # faithfulness fails items 1 and 2; hallucination (0.25, lower is better) passes all 4.
    assert data["stratified"]["population"] == {"fail": 2, "pass": 6}
    assert data["size"] == 5  # 2 failing + ceil(0.5 × 6)
    assert data["estimate"]["precision"] is None


def test_queue_create_api_disagreement(client, reviewer, run):
    result = run.results.filter(final_passed=True).first()
    result_set_human_pass(result=result, user=reviewer, passed=False)
    data = client.post(
        f"/api/runs/{run.pk}/queues",
        {"source": "disagreement"},
        content_type="application/json",
        **bearer(reviewer),
    ).json()
    assert data["result_ids"] == [result.pk]


def test_queue_api_errors_and_permissions(client, reviewer, viewer, outsider, run):
    url = f"/api/runs/{run.pk}/queues"

    def post(user, body):
        return client.post(url, body, content_type="application/json", **bearer(user))

    assert post(viewer, {}).status_code == 403
    assert post(outsider, {}).status_code == 404
    assert post(reviewer, {"filters": {"q": "no such text"}}).status_code == 400
    assert post(reviewer, {"stratified": {"pass_share": 2}}).status_code == 422
    assert post(reviewer, {"filters": {"bogus": 1}}).status_code == 422
    assert not ReviewQueue.objects.exists()
    queue_id = post(reviewer, {}).json()["id"]
    assert client.get(f"/api/queues/{queue_id}", **bearer(outsider)).status_code == 404
    assert client.get(f"/api/queues/{queue_id}", **bearer(viewer)).status_code == 200
    assert client.get("/api/queues/999999", **bearer(reviewer)).status_code == 404
