"""Overlap review: several reviewers answer each result blind, the queue's rule turns
their answers into the final verdict, disagreement goes to an adjudicator."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent, Role
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.evals.models import Override, Result
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import (
    FinalRule,
    QueueEntry,
    Review,
    ReviewQueue,
)
from evalsite.review.queues.services import queue_create
from evalsite.review.team.selectors import (
    agreement_report,
    answer_target,
    guideline_in_force,
    queue_pass_agreement,
)
from evalsite.review.team.services import (
    Answer,
    decide_final,
    review_adjudicate,
    review_answer,
)
from scoring.agreement import krippendorff_alpha
from tests.conftest import bearer, login
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db

V1 = "verdicts.0.verdict"
V2 = "verdicts.1.verdict"


# ------------------------------------------------------------------ the rule alone


def test_majority_decides_each_field_by_more_than_half() -> None:
    answers = [
        Answer(True, {V1: "no"}),
        Answer(True, {}),
        Answer(False, {V1: "no"}),
    ]
    decision = decide_final(answers, rule="majority", judge_values={V1: "yes"})
    assert decision.answer == Answer(True, {V1: "no"}, None)


def test_majority_tie_goes_to_adjudication() -> None:
    decision = decide_final(
        [Answer(True), Answer(False)], rule="majority", judge_values={}
    )
    assert decision.answer is None
    assert decision.disagreements == ("pass/fail",)


def test_unanimous_needs_every_field_equal_and_names_the_split_ones() -> None:
    judge = {V1: "yes", V2: "yes"}
    same = decide_final(
        [Answer(False, {V2: "no"}), Answer(False, {V2: "no"})],
        rule="unanimous",
        judge_values=judge,
    )
    assert same.answer == Answer(False, {V2: "no"}, None)
    split = decide_final(
        [Answer(False, {V1: "no"}), Answer(False, {V2: "no"})],
        rule="unanimous",
        judge_values=judge,
    )
    assert split.answer is None
    assert split.disagreements == (V1, V2)


def test_a_flip_back_to_the_judge_is_no_flip() -> None:
    decision = decide_final(
        [Answer(True, {V1: "yes"}), Answer(True, {})],
        rule="unanimous",
        judge_values={V1: "yes"},
    )
    assert decision.answer == Answer(True, {}, None)


def test_scores_median_under_majority_and_equal_under_unanimous() -> None:
    answers = [
        Answer(True, score=0.2),
        Answer(True, score=0.8),
        Answer(True, score=0.5),
    ]
    assert decide_final(answers, rule="majority", judge_values={}).answer == Answer(
        True, {}, 0.5
    )
    assert decide_final(answers, rule="unanimous", judge_values={}).answer is None
    few = [Answer(True, score=0.2), Answer(True), Answer(True)]
    assert decide_final(few, rule="majority", judge_values={}).answer == Answer(
        True, {}, None
    )


# ------------------------------------------------------------------ the services


@pytest.fixture
def run(project):
    # Judge: items 0 and 2 pass (every claim supported), item 1 fails.
    analyses = [
        judged_claims("yes", "yes"),
        judged_claims("no", "no"),
        judged_claims("yes", "yes", "yes"),
    ]
    return make_run(project, n_items=3, analyses={"faithfulness": analyses})


@pytest.fixture
def second(project):
    user = UserFactory(username="bea")
    MembershipFactory(project=project, user=user, role=Role.REVIEWER)
    return user


@pytest.fixture
def adjudicator(project):
    user = UserFactory(username="ada")
    MembershipFactory(project=project, user=user, role=Role.ADJUDICATOR)
    return user


def _queue(run, user, *, overlap=2, rule=FinalRule.UNANIMOUS, blind=True):
    return queue_create(
        run=run,
        user=user,
        query=ResultQuery(sort="item"),
        overlap=overlap,
        final_rule=rule,
        blind=blind,
    )


def _result(queue, position) -> Result:
    return QueueEntry.objects.get(queue=queue, position=position).result


def test_queue_overlap_and_rule_are_validated(run, reviewer):
    with pytest.raises(ApplicationError, match="between 1 and 10"):
        _queue(run, reviewer, overlap=11)
    with pytest.raises(ApplicationError, match="single review"):
        _queue(run, reviewer, overlap=1, rule=FinalRule.MAJORITY)
    with pytest.raises(ApplicationError, match="majority or"):
        _queue(run, reviewer, overlap=2, rule=FinalRule.SINGLE)
    queue = queue_create(run=run, user=reviewer, query=ResultQuery(), overlap=3)
    assert (queue.overlap, queue.final_rule) == (3, FinalRule.UNANIMOUS)


def test_project_default_overlap_applies_to_new_queues(run, reviewer, project):
    project.default_overlap = 2
    project.save()
    queue = queue_create(run=run, user=reviewer, query=ResultQuery())
    assert queue.overlap == 2


def test_answers_wait_for_the_quorum_then_the_agreed_answer_is_final(
    run, reviewer, second
):
    queue = _queue(run, reviewer)
    result = _result(queue, 1)
    assert result.final_passed is True
    first = review_answer(
        queue=queue, result=result, user=reviewer, passed=False, flips={V1: "no"}
    )
    assert not first.decided
    result.refresh_from_db()
    assert (result.reviewed, result.final_passed) == (False, True)
    assert not Override.objects.filter(result=result).exists()
    done = review_answer(
        queue=queue, result=result, user=second, passed=False, flips={V1: "no"}
    )
    assert done.decided
    result.refresh_from_db()
    assert result.reviewed and result.human_passed is False
    assert result.final_passed is False
    assert result.final_analysis["verdicts"][0]["verdict"] == "no"
    # The final verdict went through the override services: compute_score on the
    # flipped analysis (1 of 2 claims supported).
    assert result.final_score == pytest.approx(0.5)
    entry = QueueEntry.objects.get(queue=queue, position=1)
    assert entry.state == QueueEntry.State.DECIDED
    assert entry.decision["how"] == "unanimous"
    decide = AuditEvent.objects.get(action="review.decide", result_id=result.pk)
    assert {a["reviewer"] for a in decide.before["answers"]} == {
        "bea",
        reviewer.username,
    }


def test_the_aggregates_follow_the_final_verdict(run, reviewer, second):
    queue = _queue(run, reviewer)
    result = _result(queue, 1)
    rs_id = result.run_scorer_id
    before = next(a for a in run_aggregates(run_id=run.pk) if a.run_scorer_id == rs_id)
    for user in (reviewer, second):
        review_answer(queue=queue, result=result, user=user, passed=False)
    after = next(a for a in run_aggregates(run_id=run.pk) if a.run_scorer_id == rs_id)
    assert after.reviewed == before.reviewed + 1
    assert before.final_pass_rate == pytest.approx(2 / 3)
    assert after.final_pass_rate == pytest.approx(1 / 3)


def test_disagreement_goes_to_adjudication_and_the_adjudicator_decides(
    run, reviewer, second, adjudicator
):
    queue = _queue(run, reviewer)
    result = _result(queue, 1)
    review_answer(queue=queue, result=result, user=reviewer, passed=True)
    outcome = review_answer(queue=queue, result=result, user=second, passed=False)
    assert outcome.adjudicate and not outcome.decided
    entry = QueueEntry.objects.get(queue=queue, position=1)
    assert entry.state == QueueEntry.State.ADJUDICATE
    assert entry.decision == {"disagreements": ["pass/fail"]}
    result.refresh_from_db()
    assert not result.reviewed
    # A third reviewer cannot answer any more; a plain reviewer cannot decide.
    third = UserFactory(username="cy")
    with pytest.raises(ConflictError, match="adjudicator"):
        review_answer(queue=queue, result=result, user=third, passed=True)
    with pytest.raises(ApplicationError, match="Only owners and adjudicators"):
        review_adjudicate(queue=queue, result=result, user=second, passed=False)
    review_adjudicate(
        queue=queue, result=result, user=adjudicator, passed=False, note="claim wrong"
    )
    result.refresh_from_db()
    assert result.final_passed is False and result.reviewed
    entry.refresh_from_db()
    assert entry.state == QueueEntry.State.DECIDED
    assert entry.decided_by == adjudicator
    event = AuditEvent.objects.get(action="review.adjudicate")
    assert [a["passed"] for a in event.before["answers"]] == [True, False]
    assert Review.objects.filter(kind=Review.Kind.ADJUDICATION).count() == 1
    with pytest.raises(ConflictError, match="already decided"):
        review_adjudicate(queue=queue, result=result, user=adjudicator, passed=True)


def test_answering_again_replaces_the_answer_until_the_quorum(run, reviewer, second):
    queue = _queue(run, reviewer, overlap=3)
    result = _result(queue, 1)
    review_answer(queue=queue, result=result, user=reviewer, passed=True)
    review_answer(queue=queue, result=result, user=reviewer, passed=False, note="x")
    mine = Review.objects.get(queue=queue, reviewer=reviewer)
    assert (mine.passed, mine.note) == (False, "x")
    assert QueueEntry.objects.get(queue=queue, position=1).answers == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"passed": "yes"}, "true or false"),
        ({"passed": None}, "Answer pass or fail"),
        ({"passed": True, "flips": {"verdicts.9.verdict": "no"}}, "verdicts.9"),
        ({"passed": True, "flips": {V1: "maybe"}}, "not allowed"),
        ({"passed": True, "flips": ["no"]}, "object"),
        ({"passed": True, "score": float("inf")}, "finite"),
        ({"passed": True, "score": 5}, "between"),
        ({"passed": True, "note": "a\x00b"}, "cannot be stored"),
    ],
)
def test_bad_answers_are_refused_and_store_nothing(run, reviewer, kwargs, message):
    queue = _queue(run, reviewer)
    with pytest.raises(ApplicationError, match=message):
        review_answer(queue=queue, result=_result(queue, 1), user=reviewer, **kwargs)
    assert not Review.objects.exists()


def test_single_review_queues_refuse_answers(run, reviewer):
    queue = _queue(run, reviewer, overlap=1, rule=FinalRule.SINGLE)
    with pytest.raises(ApplicationError, match="one reviewer per result"):
        review_answer(queue=queue, result=_result(queue, 1), user=reviewer, passed=True)


def test_queue_agreement_from_counts_matches_the_full_alpha(run, reviewer, second):
    third = UserFactory(username="cy")
    MembershipFactory(project=run.project, user=third, role=Role.REVIEWER)
    queue = _queue(run, reviewer, overlap=3, rule=FinalRule.MAJORITY)
    votes = {1: (True, True, False), 2: (False, False, False), 3: (True, False, False)}
    for position, passes in votes.items():
        result = _result(queue, position)
        for user, passed in zip((reviewer, second, third), passes, strict=True):
            review_answer(queue=queue, result=result, user=user, passed=passed)
    quick = queue_pass_agreement(queue_id=queue.pk)
    expected = krippendorff_alpha([list(v) for v in votes.values()], "nominal")
    assert quick["items"] == 3
    assert quick["alpha"] == pytest.approx(expected)
    assert quick["percent"] == pytest.approx(5 / 9)
    report = agreement_report(queue=queue)
    assert report.alpha_pass.value == pytest.approx(expected)
    assert report.alpha_pass.items == 3
    assert report.alpha_pass.ci_low is not None
    assert report.reviewers == 3
    assert len(report.kappa_pairs) == 3
    by_name = {s.username: s for s in report.per_reviewer}
    # Majority finals: fail? item 1 pass (2 of 3), item 2 fail, item 3 fail.
    assert by_name[reviewer.username].with_final == pytest.approx(2 / 3)
    assert by_name["cy"].with_final == pytest.approx(2 / 3)
    assert by_name["bea"].with_final == pytest.approx(1.0)
    assert by_name["bea"].answered == 3


def test_verdict_agreement_counts_each_verdict_and_follows_new_answers(
    run, reviewer, second
):
    """alpha over the verdicts: one unit per (result, verdict), each reviewer's value
    the one they set or else the judge's; an answer after a first report (the judges'
    values then come from its cache) changes the figure as a recount has it."""
    third = UserFactory(username="cy")
    MembershipFactory(project=run.project, user=third, role=Role.REVIEWER)
    queue = _queue(run, reviewer, overlap=3, rule=FinalRule.MAJORITY)
    answers = {
        1: [(reviewer, {V1: "no"}), (second, {}), (third, {})],
        2: [(reviewer, {}), (second, {}), (third, {})],
        3: [(reviewer, {}), (second, {})],
    }
    for position, given in answers.items():
        result = _result(queue, position)
        for user, flips in given:
            review_answer(
                queue=queue, result=result, user=user, passed=True, flips=flips
            )
    units = [
        ["no", "yes", "yes"],  # item 0: the judge said yes, yes
        ["yes", "yes", "yes"],
        ["no", "no", "no"],  # item 1: no, no, nobody changed them
        ["no", "no", "no"],
        ["yes", "yes"],  # item 2: yes, yes, yes, two answers so far
        ["yes", "yes"],
        ["yes", "yes"],
    ]
    first = agreement_report(queue=queue).alpha_verdicts
    assert first.items == 7
    assert first.value == pytest.approx(krippendorff_alpha(units, "nominal"))
    review_answer(
        queue=queue, result=_result(queue, 3), user=third, passed=True, flips={V2: "no"}
    )
    units[4:] = [["yes", "yes", "yes"], ["yes", "yes", "no"], ["yes", "yes", "yes"]]
    after = agreement_report(queue=queue).alpha_verdicts
    assert after.items == 7
    assert after.value == pytest.approx(krippendorff_alpha(units, "nominal"))
    assert after.value != pytest.approx(first.value)


# ------------------------------------------------------------------ pages and API


def test_the_card_hides_the_others_answers_until_you_answer(
    client, run, reviewer, second
):
    queue = _queue(run, reviewer, blind=True)
    result = _result(queue, 1)
    review_answer(
        queue=queue, result=result, user=reviewer, passed=False, note="SECRET-NOTE"
    )
    login(client, second)
    url = reverse("review:queue", args=[queue.project_id, queue.pk]) + "?pos=1"
    page = client.get(url).content.decode()
    assert "SECRET-NOTE" not in page
    assert "others-hidden" in page
    assert 'id="answer-form"' in page
    # Blind: no judge verdict before answering.
    assert "judge-score" not in page
    # The audit log does not give the answer away either.
    audit = client.get(reverse("review:run_audit", args=[queue.project_id, run.pk]))
    assert "SECRET-NOTE" not in audit.content.decode()
    answer_url = reverse("review:queue_answer", args=[queue.project_id, queue.pk, 1])
    response = client.post(answer_url, {"passed": "fail"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    page = response.content.decode()
    assert "SECRET-NOTE" in page
    assert "overlap-reviews" in page


def test_api_blind_answers_then_adjudication(client, run, reviewer, second, owner):
    queue = _queue(run, reviewer)
    base = f"/api/queues/{queue.pk}/entries/1"
    r = client.post(
        f"{base}/reviews",
        {"passed": True, "note": "first"},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert r.status_code == 201, r.content
    assert r.json()["answers"] == 1 and r.json()["state"] == "open"
    seen = client.get(f"{base}/reviews", **bearer(second)).json()
    assert seen["visible"] is False and seen["reviews"] == []
    r = client.post(
        f"{base}/reviews",
        {"passed": False},
        content_type="application/json",
        **bearer(second),
    )
    body = r.json()
    assert body["state"] == "adjudicate" and body["visible"] is True
    assert body["aggregates"][0]["reviewed"] == 0  # not decided yet
    assert [x["note"] for x in body["reviews"]] == ["first", ""]
    listed = client.get(
        f"/api/projects/{queue.project_id}/adjudication", **bearer(second)
    ).json()
    assert listed["count"] == 1
    assert [(e["queue_id"], e["position"]) for e in listed["items"]] == [(queue.pk, 1)]
    assert listed["items"][0]["disagreements"] == ["pass/fail"]
    forbidden = client.post(
        f"{base}/adjudication",
        {"passed": False},
        content_type="application/json",
        **bearer(second),
    )
    assert forbidden.status_code == 403
    r = client.post(
        f"{base}/adjudication",
        {"passed": False},
        content_type="application/json",
        **bearer(owner),
    )
    assert r.status_code == 200, r.content
    assert r.json()["state"] == "decided"
    agreement = client.get(f"/api/queues/{queue.pk}/agreement", **bearer(owner)).json()
    assert agreement["percent_agreement"]["items"] == 1
    assert agreement["percent_agreement"]["value"] == 0.0
    per_run = client.get(f"/api/runs/{run.pk}/agreement", **bearer(owner))
    assert per_run.status_code == 200
    assert per_run.json()[0]["scope"] == "scorer"


def test_api_refuses_viewers_outsiders_and_bad_payloads(
    client, run, reviewer, viewer, outsider
):
    queue = _queue(run, reviewer)
    base = f"/api/queues/{queue.pk}/entries/1/reviews"
    payload = {"passed": True}
    assert (
        client.post(
            base, payload, content_type="application/json", **bearer(viewer)
        ).status_code
        == 403
    )
    assert (
        client.post(
            base, payload, content_type="application/json", **bearer(outsider)
        ).status_code
        == 404
    )
    assert client.get(base, **bearer(outsider)).status_code == 404
    bad = client.post(
        base,
        {"passed": True, "extra": 1},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert bad.status_code in (400, 422)
    missing = client.post(
        f"/api/queues/{queue.pk}/entries/99/reviews",
        payload,
        content_type="application/json",
        **bearer(reviewer),
    )
    assert missing.status_code == 404
    assert not Review.objects.exists()


def test_adjudication_pages(client, run, reviewer, second, adjudicator):
    queue = _queue(run, reviewer)
    result = _result(queue, 1)
    review_answer(queue=queue, result=result, user=reviewer, passed=True)
    review_answer(queue=queue, result=result, user=second, passed=False)
    login(client, adjudicator)
    listing = client.get(reverse("review:adjudication", args=[queue.project_id]))
    assert "1 result waiting" in listing.content.decode()
    url = reverse("review:adjudicate", args=[queue.project_id, queue.pk, 1])
    page = client.get(url).content.decode()
    assert 'id="adjudicate-form"' in page and "bea" in page
    response = client.post(url, {"passed": "fail"})
    assert response.status_code == 302
    result.refresh_from_db()
    assert result.final_passed is False
    login(client, second)
    assert client.post(url, {"passed": "pass"}).status_code in (403, 409, 200)
    result.refresh_from_db()
    assert result.final_passed is False
    agreement = client.get(reverse("review:agreement", args=[queue.project_id, run.pk]))
    assert agreement.status_code == 200
    assert "Krippendorff" in agreement.content.decode()


def test_owner_sets_the_project_default_overlap_in_settings(client, project, owner):
    login(client, owner)
    url = reverse("accounts:settings", args=[project.pk])
    body = {"name": project.name, "description": "", "default_overlap": "3"}
    assert client.post(url, body).status_code == 302
    project.refresh_from_db()
    assert project.default_overlap == 3
    bad = client.post(url, {**body, "default_overlap": "11"})
    assert "less than or equal to 10" in bad.content.decode()
    project.refresh_from_db()
    assert project.default_overlap == 3


def test_the_explorer_form_builds_an_overlap_queue(client, run, reviewer):
    login(client, reviewer)
    url = reverse("review:queue_create", args=[run.project_id, run.pk])
    response = client.post(
        url,
        {"source": "filters", "overlap": "3", "final_rule": "majority", "sort": "item"},
    )
    assert response.status_code == 302
    queue = ReviewQueue.objects.get()
    assert (queue.overlap, queue.final_rule) == (3, "majority")
    bad = client.post(url, {"source": "filters", "overlap": "0"})
    assert bad.status_code == 400
    assert ReviewQueue.objects.count() == 1


def test_each_answer_records_the_guidelines_in_force(run, reviewer, project):
    from evalsite.review.models import Guideline

    queue = _queue(run, reviewer, overlap=3)
    Guideline.objects.create(project=project, version=1, body="project v1")
    Guideline.objects.create(project=project, version=2, body="project v2")
    review_answer(queue=queue, result=_result(queue, 1), user=reviewer, passed=True)
    assert Review.objects.get(result=_result(queue, 1)).guideline.body == "project v2"
    Guideline.objects.create(project=project, queue=queue, version=1, body="queue v1")
    review_answer(queue=queue, result=_result(queue, 2), user=reviewer, passed=True)
    assert Review.objects.get(result=_result(queue, 2)).guideline.body == "queue v1"
    # A cleared queue text brings the project's back, on the page and in the record.
    Guideline.objects.create(project=project, queue=queue, version=2, body="")
    review_answer(queue=queue, result=_result(queue, 3), user=reviewer, passed=True)
    assert Review.objects.get(result=_result(queue, 3)).guideline.body == "project v2"


# ------------------------------------------------------------------ the answer's cost


@pytest.fixture
def third(project):
    user = UserFactory(username="cy")
    MembershipFactory(project=project, user=user, role=Role.REVIEWER)
    return user


def _two_answers_in(queue, reviewer, second, position):
    result = _result(queue, position)
    for user in (reviewer, second):
        review_answer(queue=queue, result=result, user=user, passed=True)
    return result


def test_the_answer_that_decides_costs_a_pinned_number_of_queries(
    client, run, reviewer, second, third, django_assert_num_queries
):
    """The bench's timed request (the last answer, which applies the majority) through
    the API and through the card. Counted on SQLite inside the test's transaction (a
    savepoint and its release stand for BEGIN and COMMIT) with the aggregates counted
    afresh (the bench reads them from the cache: 1 query). Were 36 and 43 before the
    answer path was trimmed."""
    queue = _queue(run, reviewer, overlap=3, rule=FinalRule.MAJORITY)
    _two_answers_in(queue, reviewer, second, 1)
    _two_answers_in(queue, reviewer, second, 2)
    headers = bearer(third)
    # API token (2), queue and membership (2), the entry with its result's run and
    # item and the guidelines (1); savepoint, result lock and run scorer (3); the
    # entry's reviews, the new answer, the answer's and the decision's audit in one
    # insert (3); the final verdict agreeing with the judge: the result and its audit
    # (2); the entry, the review version, release (3); the queue's agreement (1),
    # whether another blind queue still waits for this reviewer's answer on the
    # result (1, review.selectors.blind) and the aggregates (6).
    with django_assert_num_queries(24):
        response = client.post(
            f"/api/queues/{queue.pk}/entries/1/reviews",
            {"passed": True},
            content_type="application/json",
            **headers,
        )
    assert response.status_code == 201, response.content
    assert response.json()["state"] == "decided"
    login(client, third)
    url = reverse("review:queue_answer", args=[queue.project_id, queue.pk, 2])
    # Session user (1), queue and membership (2), the entry with the whole result
    # and the guidelines (1); the same answer (9) but a final verdict against the
    # judge: a pass override, the overrides, the result and its audit (4); entry,
    # version, release (3); then the card: progress and agreement in one read (1),
    # the aggregates (3: the judge side is cached now), the comments (1), whether
    # another blind queue still waits for this reviewer's answer (1); an open flag
    # on the item (1) and the navigation's waiting count, sent along out of band,
    # with the item Skip leads to read in the same scan (2: the project's open
    # queues and runs, then the counts).
    with django_assert_num_queries(26):
        response = client.post(url, {"passed": "pass"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-state="decided"' in page and "2 of 3 reviewed" in page


def test_an_answer_keeps_the_audit_in_order(run, reviewer, second, third):
    queue = _queue(run, reviewer, overlap=3, rule=FinalRule.MAJORITY)
    result = _two_answers_in(queue, reviewer, second, 2)  # the judge said fail
    review_answer(queue=queue, result=result, user=third, passed=False)
    actions = list(
        AuditEvent.objects.filter(result_id=result.pk)
        .order_by("id")
        .values_list("action", flat=True)
    )
    # Each answer, then the decision, then the override that applies it.
    assert actions == [
        "review.answer",
        "review.answer",
        "review.answer",
        "review.decide",
        "override.create",
    ]
    result.refresh_from_db()
    assert result.final_passed is True and result.reviewed


def test_an_answer_read_before_another_decided_the_entry_is_refused(
    run, reviewer, second, third
):
    """The API and the card read the entry before the result is locked; if another
    reviewer's answer decides it in between, this answer is refused and leaves
    nothing behind, as if the entry had been read under the lock."""
    queue = _queue(run, reviewer, overlap=2, rule=FinalRule.MAJORITY)
    result = _result(queue, 1)
    review_answer(queue=queue, result=result, user=reviewer, passed=True)
    stale = answer_target(queue=queue, position=1)
    assert stale is not None and stale.entry.state == QueueEntry.State.OPEN
    review_answer(queue=queue, result=_result(queue, 1), user=second, passed=True)
    with pytest.raises(ConflictError, match="already decided"):
        review_answer(
            queue=queue,
            result=stale.entry.result,
            user=third,
            passed=False,
            target=stale,
        )
    assert not Review.objects.filter(reviewer=third).exists()
    assert not AuditEvent.objects.filter(actor=third).exists()
    entry = QueueEntry.objects.get(queue=queue, position=1)
    assert (entry.state, entry.answers, entry.answers_pass) == ("decided", 2, 2)
    assert AuditEvent.objects.filter(action="review.decide").count() == 1


@pytest.mark.parametrize(
    ("project_body", "queue_body", "expected"),
    [
        (None, None, None),
        ("project text", None, "project text"),
        ("project text", "queue text", "queue text"),
        # A cleared or blank latest version counts as none (Python's whitespace,
        # the no-break space too).
        ("project text", " \n\u00a0", "project text"),
        ("\t", "", None),
    ],
)
def test_the_guidelines_an_answer_records_are_guideline_current(
    run, reviewer, project, project_body, queue_body, expected
):
    from evalsite.review.guidelines.selectors import guideline_current
    from evalsite.review.models import Guideline

    queue = _queue(run, reviewer, overlap=2)
    if project_body is not None:
        Guideline.objects.create(project=project, version=1, body="older")
        Guideline.objects.create(project=project, version=2, body=project_body)
    if queue_body is not None:
        Guideline.objects.create(project=project, queue=queue, version=1, body="old")
        Guideline.objects.create(
            project=project, queue=queue, version=2, body=queue_body
        )
    current = guideline_current(project_id=project.pk, queue_id=queue.pk)
    assert (current.body if current else None) == expected
    expected_id = current.pk if current else None
    target = answer_target(queue=queue, position=1, full=True)
    for found in (
        guideline_in_force(project_id=project.pk, queue_id=queue.pk),
        target.guideline,
    ):
        assert (found.pk if found else None) == expected_id
        if found:
            assert found.version == current.version
    outcome = review_answer(
        queue=queue,
        result=target.entry.result,
        user=reviewer,
        passed=True,
        target=target,
    )
    assert outcome.review.guideline_id == expected_id
    assert Review.objects.get().guideline_id == expected_id
