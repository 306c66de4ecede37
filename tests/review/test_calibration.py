from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result
from evalsite.evals.results.verdicts import (
    override_create,
    result_accept,
    result_set_human_pass,
)
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import QueueEntry
from evalsite.review.queues.selectors import queue_estimate
from evalsite.review.queues.services import queue_create
from tests.conftest import login
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


PASS = judged_claims("yes", "yes")  # 1.0
FAIL = judged_claims("yes", "no", "no")  # 0.33


@pytest.fixture
def run(project):
    # 4 judge-fails (items 0-3) and 16 judge-passes (items 4-19).
    analyses = [FAIL] * 4 + [PASS] * 16
    return make_run(project, n_items=20, analyses={"faithfulness": analyses})


def _entry_results(queue):
    return [
        e.result
        for e in queue.entries.select_related("result__item").order_by("position")
    ]


# ------------------------------------------------------------------ disagreement


def test_disagreement_queue_holds_results_where_human_differs_from_judge(run, reviewer):
    results = list(run.results.order_by("item__index"))
    result_set_human_pass(result=results[0], user=reviewer, passed=True)  # fail → pass
    override_create(
        result=results[5],
        user=reviewer,
        kind="verdict",
        path="verdicts.0.verdict",
        value="no",
    )
    result_accept(result=results[6], user=reviewer)  # agrees: not a disagreement
    queue = queue_create(
        run=run, user=reviewer, query=ResultQuery(), source="disagreement"
    )
    assert {r.pk for r in _entry_results(queue)} == {results[0].pk, results[5].pk}
    assert queue.filters == {"disagree": True}


def test_disagreement_button_on_explorer(client, reviewer, run):
    results = list(run.results.order_by("item__index"))
    result_set_human_pass(result=results[4], user=reviewer, passed=False)
    login(client, reviewer)
    explorer = client.get(
        reverse("review:explorer", args=[run.project_id, run.pk])
    ).content.decode()
    assert 'id="disagreement-queue"' in explorer
    response = client.post(
        reverse("review:queue_create", args=[run.project_id, run.pk]),
        {"source": "disagreement"},
    )
    assert response.status_code == 302
    page = client.get(response.url).content.decode()
    assert "1 of 1 reviewed" in page and "Disagreement" in page


# ------------------------------------------------------------------ blind review


@pytest.fixture
def blind_queue(run, reviewer):
    return queue_create(
        run=run, user=reviewer, query=ResultQuery(judge_passed=False), blind=True
    )


def _card(client, queue, pos=1):
    url = reverse("review:queue", args=[queue.project_id, queue.pk]) + f"?pos={pos}"
    return client.get(url, headers={"HX-Request": "true"}).content.decode()


def test_blind_queue_hides_judge_verdict_score_and_reason_until_answer(
    client, reviewer, blind_queue
):
    result = _entry_results(blind_queue)[0]
    Result.objects.filter(pk=result.pk).update(reason="JUDGE-REASON-TEXT")
    login(client, reviewer)
    before = _card(client, blind_queue)
    assert 'id="blind-notice"' in before
    assert "JUDGE-REASON-TEXT" not in before
    assert "0.33" not in before  # no judge score
    assert (
        "contradicted" not in before and "supported" not in before
    )  # no claim verdicts
    assert 'id="action-accept"' not in before and 'id="flip-buttons"' not in before
    assert 'id="action-pass"' in before and 'id="action-fail"' in before
    assert 'id="queue-aggregates"' not in before

    action = reverse(
        "review:queue_action", args=[blind_queue.project_id, blind_queue.pk, 1, "pass"]
    )
    after = client.post(action, headers={"HX-Request": "true"}).content.decode()
    result.refresh_from_db()
    assert result.human_passed is True and result.reviewed
    assert 'id="blind-notice"' not in after
    assert "JUDGE-REASON-TEXT" in after and "0.33" in after
    assert "judge said" in after


def test_project_blind_setting_makes_every_queue_blind(client, reviewer, project, run):
    project.blind_review = True
    project.save()
    queue = queue_create(run=run, user=reviewer, query=ResultQuery(judge_passed=False))
    login(client, reviewer)
    assert 'id="blind-notice"' in _card(client, queue)


def test_non_blind_queue_shows_judge_immediately(client, reviewer, run):
    queue = queue_create(run=run, user=reviewer, query=ResultQuery(judge_passed=False))
    login(client, reviewer)
    card = _card(client, queue)
    assert 'id="blind-notice"' not in card and "0.33" in card


# ------------------------------------------------------------------ stratified sampling


def test_stratified_queue_has_all_failing_and_a_seeded_share_of_passing(run, reviewer):
    queue = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=0.25,
        seed=7,
    )
    strata = list(queue.entries.values_list("stratum", flat=True))
    assert strata.count("fail") == 4
    assert strata.count("pass") == 4  # ceil(0.25 × 16)
    assert queue.stratified["population"] == {"fail": 4, "pass": 16}
    for entry in queue.entries.select_related("result"):
        assert entry.result.judge_passed is (entry.stratum == "pass")
    same = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=0.25,
        seed=7,
    )
    assert list(same.entries.values_list("result_id", flat=True)) == list(
        queue.entries.values_list("result_id", flat=True)
    )
    other = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=0.25,
        seed=8,
    )
    assert set(other.entries.values_list("result_id", flat=True)) != set(
        queue.entries.values_list("result_id", flat=True)
    )


def test_stratified_sample_keeps_at_least_one_passing(run, reviewer):
    queue = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=0.01,
    )
    assert queue.entries.filter(stratum="pass").count() == 1


def test_stratified_excludes_errors(run, reviewer):
    Result.objects.filter(run=run, item__index=0).update(status=Result.Status.ERROR)
    queue = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=1,
    )
    assert queue.size == 19
    assert queue.stratified["population"] == {"fail": 3, "pass": 16}


@pytest.mark.parametrize("share", [None, 0, 1.5, -0.1])
def test_stratified_rejects_bad_share(run, reviewer, share):
    with pytest.raises(ApplicationError):
        queue_create(
            run=run,
            user=reviewer,
            query=ResultQuery(),
            source="stratified",
            pass_share=share,
        )


def test_estimate_precision_recall_from_reviewed_sample_hand_computed(run, reviewer):
    queue = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=0.25,
        seed=3,
    )
    fails = [
        e.result for e in queue.entries.filter(stratum="fail").select_related("result")
    ]
    passes = [
        e.result for e in queue.entries.filter(stratum="pass").select_related("result")
    ]
    # Judge-fails: human agrees on 3 of 4 reviewed. Judge-passes: 1 of 2 reviewed is a human fail.
    for r in fails[:3]:
        result_accept(result=r, user=reviewer)
    result_set_human_pass(result=fails[3], user=reviewer, passed=True)
    result_set_human_pass(result=passes[0], user=reviewer, passed=False)
    result_accept(result=passes[1], user=reviewer)
    est = queue_estimate(queue=queue)
    assert (est.reviewed_fail, est.agree_fail, est.reviewed_pass, est.missed_fail) == (
        4,
        3,
        2,
        1,
    )
    assert est.precision == pytest.approx(0.75)
    # TP ≈ 4 × 3/4 = 3; FN ≈ 16 × 1/2 = 8; recall = 3 / 11.
    assert est.est_true_fail == pytest.approx(3.0)
    assert est.est_missed_fail == pytest.approx(8.0)
    assert est.recall == pytest.approx(3 / 11)


def test_estimate_needs_both_strata(run, reviewer):
    queue = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(),
        source="stratified",
        pass_share=0.25,
    )
    est = queue_estimate(queue=queue)
    assert est.precision is None and est.recall is None
    first_fail = queue.entries.filter(stratum="fail").first().result
    result_accept(result=first_fail, user=reviewer)
    est = queue_estimate(queue=queue)
    assert est.precision == 1.0 and est.recall is None


def test_estimate_is_none_for_plain_queues(run, reviewer):
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    assert queue_estimate(queue=queue) is None


def test_queue_page_shows_estimate_with_counts(client, reviewer, run):
    login(client, reviewer)
    response = client.post(
        reverse("review:queue_create", args=[run.project_id, run.pk]),
        {"source": "stratified", "pass_share": "25", "seed": "1", "blind": "on"},
    )
    assert response.status_code == 302
    queue_id = int(response.url.rstrip("/").split("/")[-1])
    entry = QueueEntry.objects.filter(queue_id=queue_id, stratum="fail").first()
    result_accept(result=entry.result, user=reviewer)
    body = client.get(response.url).content.decode()
    assert 'id="queue-estimate"' in body
    assert 'id="estimate-precision">100 %' in body
    assert "1 of 1 reviewed judge-fail is a human fail" in body
    assert "blind review" in body
