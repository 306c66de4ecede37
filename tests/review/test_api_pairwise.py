"""Pairwise review through the API (issue 19 part 2): create, read pairs blind,
answer by side or by run, figures and agreement, isolation and roles."""

from __future__ import annotations

import json

import pytest

from evalsite.accounts.models import AuditEvent, Role
from evalsite.review.models import PairwiseItem, Preference, ReviewQueue
from evalsite.review.services.pairwise import pairwise_answer
from tests.conftest import bearer
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.pairwise_builders import make_model_runs, pairwise_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def bea(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="bea"), role=Role.REVIEWER
    ).user


@pytest.fixture
def runs(project):
    return make_model_runs(project, n=4)


def _post(client, url, body, user):
    return client.post(
        url, data=json.dumps(body), content_type="application/json", **bearer(user)
    )


def test_create_returns_the_queue_with_its_pairing(client, runs, owner):
    run_a, run_b = runs
    response = _post(
        client,
        f"/api/runs/{run_a.pk}/pairwise",
        {"run_b_id": run_b.pk, "match": "key", "key": "id", "overlap": 2, "seed": 9},
        owner,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["run_a_id"], body["run_b_id"], body["size"]) == (run_a.pk, run_b.pk, 4)
    assert body["overlap"] == 2 and body["pairing"]["seed"] == 9
    assert body["total"] == 4 and body["complete"] == 0 and body["mine"] == 0
    assert body["figures"]["a"]["answers"] == 0
    assert "Wilson" in body["figures"]["method"]
    assert ReviewQueue.objects.get(pk=body["id"]).kind == "pairwise"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"run_b_id": "RUN_A"}, 400, ""),
        ({"run_b_id": "RUN_B", "match": "key", "key": ""}, 400, "key"),
        ({"run_b_id": "RUN_B", "match": "nearby"}, 422, "match"),
        ({"run_b_id": "RUN_B", "overlap": 11}, 422, "overlap"),
        ({"run_b_id": "RUN_B", "colour": "red"}, 422, "colour"),
        ({"run_b_id": 987654}, 404, ""),
    ],
)
def test_create_refuses_bad_input_clearly(client, runs, owner, body, status, field):
    run_a, run_b = runs
    body = {
        k: {"RUN_A": run_a.pk, "RUN_B": run_b.pk}.get(v, v) if isinstance(v, str) else v
        for k, v in body.items()
    }
    response = _post(client, f"/api/runs/{run_a.pk}/pairwise", body, owner)
    assert response.status_code == status, response.content
    payload = response.json()
    assert payload["detail"]
    if field:
        assert field in {e["field"] for e in payload["errors"]}
    assert not ReviewQueue.objects.filter(kind="pairwise").exists()


def test_run_b_of_another_project_is_not_found(client, runs, owner):
    run_a, _ = runs
    other = ProjectFactory()
    MembershipFactory(project=other, user=owner, role=Role.OWNER)
    _, foreign_b = make_model_runs(other, n=2)
    response = _post(
        client, f"/api/runs/{run_a.pk}/pairwise", {"run_b_id": foreign_b.pk}, owner
    )
    assert response.status_code == 404
    assert not ReviewQueue.objects.filter(kind="pairwise").exists()


def test_a_pair_is_blind_until_you_answer(client, runs, owner, reviewer, bea):
    queue = pairwise_queue(runs, owner, overlap=2, seed=4)
    pair = PairwiseItem.objects.select_related("item_a", "item_b").get(
        queue=queue, position=1
    )
    pairwise_answer(queue=queue, position=1, user=bea, choice="a", reason="bea's")
    url = f"/api/pairwise/{queue.pk}/pairs/1"
    before = client.get(url, **bearer(reviewer)).json()
    left, right = (
        (pair.item_a, pair.item_b) if pair.a_left else (pair.item_b, pair.item_a)
    )
    assert (before["left_output"], before["right_output"]) == (
        left.output,
        right.output,
    )
    assert before["visible"] is False and before["a_left"] is None
    assert before["item_a_id"] is None and before["preferences"] == []
    assert before["answers"] == 1

    answered = _post(
        client, url + "/preferences", {"side": "left", "reason": "r"}, reviewer
    )
    assert answered.status_code == 201, answered.content
    after = answered.json()
    assert after["visible"] is True and after["a_left"] == pair.a_left
    by = {p["reviewer"]: p for p in after["preferences"]}
    assert by["bea"]["reason"] == "bea's"
    assert by["rita"]["side"] == "left"
    assert by["rita"]["choice"] == ("a" if pair.a_left else "b")
    assert after["complete"] is True
    assert after["queue_agreement"]["items"] == 1
    assert AuditEvent.objects.filter(action="pairwise.answer").count() == 2


def test_answer_by_run_and_the_errors_of_a_bad_answer(client, runs, owner, reviewer):
    queue = pairwise_queue(runs, owner, overlap=1)
    url = f"/api/pairwise/{queue.pk}/pairs/2/preferences"
    assert _post(client, url, {"choice": "b"}, reviewer).status_code == 201
    assert Preference.objects.get(reviewer=reviewer).choice == "b"
    both = _post(client, url, {"choice": "a", "side": "left"}, reviewer)
    assert both.status_code == 400 and "not both" in json.dumps(both.json())
    neither = _post(client, url, {"reason": "no answer"}, reviewer)
    assert neither.status_code == 400
    bad = _post(client, url, {"side": "middle"}, reviewer)
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "side"
    missing = _post(
        client,
        f"/api/pairwise/{queue.pk}/pairs/99/preferences",
        {"side": "tie"},
        reviewer,
    )
    assert missing.status_code == 404
    # A complete pair takes no one else's answer.
    taken = _post(client, url, {"side": "tie"}, owner)
    assert taken.status_code == 409
    assert Preference.objects.count() == 1


def test_figures_hide_win_rates_from_a_reviewer_with_pairs_left(
    client, runs, owner, reviewer, bea
):
    queue = pairwise_queue(runs, owner, overlap=2)
    for position, (r, b) in enumerate(
        [("a", "a"), ("a", "b"), ("b", "b"), ("tie", "tie")], 1
    ):
        pairwise_answer(queue=queue, position=position, user=reviewer, choice=r)
        if position < 4:
            pairwise_answer(queue=queue, position=position, user=bea, choice=b)
    owner_view = client.get(
        f"/api/pairwise/{queue.pk}/agreement", **bearer(owner)
    ).json()
    assert owner_view["a"]["wins"] == 3 and owner_view["b"]["wins"] == 3
    assert owner_view["a"]["ties"] == 1
    assert owner_view["a"]["win_rate"] == pytest.approx(0.5)
    low, high = owner_view["a"]["ci_pairs_low"], owner_view["a"]["ci_pairs_high"]
    assert low <= 0.5 <= high
    assert owner_view["b"]["ci_pairs_low"] == pytest.approx(1 - high)
    assert "bootstrap interval over pairs" in owner_view["method"]
    assert owner_view["left_right"]["left"] + owner_view["left_right"]["right"] == 6
    agreement = owner_view["agreement"]
    assert agreement["percent_agreement"]["value"] == pytest.approx(2 / 3)
    assert agreement["percent_agreement"]["items"] == 3
    assert agreement["kappa_pairs"][0]["reviewers"] == ["bea", "rita"]
    # Bea still has pair 4 to answer: no win rates for her, agreement all the same.
    bea_view = client.get(f"/api/pairwise/{queue.pk}/agreement", **bearer(bea)).json()
    assert bea_view["a"] is None and bea_view["left_right"] is None
    assert bea_view["agreement"] == agreement
    # Rita answered everything: she sees them.
    assert client.get(f"/api/pairwise/{queue.pk}", **bearer(reviewer)).json()[
        "figures"
    ]["a"]


def test_lists_of_queues_and_pairs(client, runs, owner):
    queue = pairwise_queue(runs, owner, overlap=1)
    run_a, run_b = runs
    listed = client.get(
        f"/api/projects/{run_a.project_id}/pairwise?limit=5", **bearer(owner)
    ).json()
    assert listed["count"] == 1 and listed["items"][0]["run_a_id"] == run_a.pk
    pairs = client.get(
        f"/api/pairwise/{queue.pk}/pairs?limit=2", **bearer(owner)
    ).json()
    assert pairs["count"] == 4 and [p["position"] for p in pairs["items"]] == [1, 2]
    assert pairs["items"][0]["complete"] is False
    for run in (run_a, run_b):
        per_run = client.get(
            f"/api/runs/{run.pk}/pairwise/agreement", **bearer(owner)
        ).json()
        assert [q["id"] for q in per_run] == [queue.pk]


def test_outsiders_get_404_and_viewers_403(client, runs, owner, viewer, outsider):
    queue = pairwise_queue(runs, owner)
    run_a, run_b = runs
    for path in (
        f"/api/pairwise/{queue.pk}",
        f"/api/pairwise/{queue.pk}/pairs",
        f"/api/pairwise/{queue.pk}/pairs/1",
        f"/api/pairwise/{queue.pk}/agreement",
        f"/api/runs/{run_a.pk}/pairwise/agreement",
    ):
        assert client.get(path, **bearer(outsider)).status_code == 404, path
        assert client.get(path, **bearer(viewer)).status_code == 200, path
    answer = f"/api/pairwise/{queue.pk}/pairs/1/preferences"
    assert _post(client, answer, {"side": "left"}, outsider).status_code == 404
    assert _post(client, answer, {"side": "left"}, viewer).status_code == 403
    create = f"/api/runs/{run_a.pk}/pairwise"
    assert _post(client, create, {"run_b_id": run_b.pk}, viewer).status_code == 403
    assert _post(client, create, {"run_b_id": run_b.pk}, outsider).status_code == 404
    assert not Preference.objects.exists()
    assert ReviewQueue.objects.filter(kind="pairwise").count() == 1


def test_preferences_list_follows_the_blind_rule(client, runs, owner, reviewer, bea):
    queue = pairwise_queue(runs, owner, overlap=2, seed=6)
    pairwise_answer(queue=queue, position=1, user=reviewer, side="left", reason="r1")
    pairwise_answer(queue=queue, position=1, user=bea, side="right")
    pairwise_answer(queue=queue, position=2, user=bea, side="tie")
    url = f"/api/pairwise/{queue.pk}/preferences?limit=10"
    # Rita sees pair 1 (complete) but not Bea's answer on pair 2.
    rita = client.get(url, **bearer(reviewer)).json()
    assert rita["count"] == 2
    assert {(p["position"], p["reviewer"]) for p in rita["items"]} == {
        (1, "rita"),
        (1, "bea"),
    }
    pair = PairwiseItem.objects.get(queue=queue, position=1)
    row = next(p for p in rita["items"] if p["reviewer"] == "rita")
    assert row["side"] == "left" and row["a_left"] == pair.a_left
    assert row["choice"] == ("a" if pair.a_left else "b")
    assert (row["item_a_id"], row["item_b_id"]) == (pair.item_a_id, pair.item_b_id)
    assert row["reason"] == "r1"
    # Bea answered both pairs: she sees all three.
    assert client.get(url, **bearer(bea)).json()["count"] == 3
    page = client.get(url.replace("limit=10", "limit=1&offset=1"), **bearer(bea)).json()
    assert len(page["items"]) == 1 and page["count"] == 3


def test_review_queue_endpoints_point_a_pairwise_queue_id_to_its_own(
    client, runs, owner, reviewer, outsider
):
    """A pairwise queue has no review entries or pass/fail agreement: its id answers
    404 with a pointer on every review-queue endpoint, and nothing is stored."""
    queue = pairwise_queue(runs, owner)
    entry = f"/api/queues/{queue.pk}/entries/1"
    answer = {"passed": True}
    calls = (
        lambda user: client.get(f"/api/queues/{queue.pk}", **bearer(user)),
        lambda user: client.get(f"{entry}/reviews", **bearer(user)),
        lambda user: _post(client, f"{entry}/reviews", answer, user),
        lambda user: _post(client, f"{entry}/adjudication", answer, owner),
        lambda user: client.get(f"/api/queues/{queue.pk}/agreement", **bearer(user)),
    )
    for call in calls:
        response = call(reviewer)
        assert response.status_code == 404, response.content
        assert f"/api/pairwise/{queue.pk}" in response.json()["detail"]
    for call in calls[:3] + calls[4:]:
        response = call(outsider)
        assert response.status_code == 404
        assert "pairwise" not in response.content.decode()
    assert not Preference.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="review.").exists()
