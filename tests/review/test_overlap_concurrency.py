"""Reviewers answering the same result at the same moment: every answer that lands is
stored, the queue's rule decides once, and an answer that comes after the decision is
refused whole.

The API reads the entry before it locks the result (selectors.reviews.answer_target)
and writes it back only while it still takes answers; these tests make two requests
overlap on real row locks, so they run on Postgres (SQLite serialises writers).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test import Client

from evalsite.accounts.models import AuditEvent, Role
from evalsite.evals.models import Result
from evalsite.review.models import FinalRule, QueueEntry, Review
from evalsite.review.schemas import ResultQuery
from evalsite.review.services import queue_create
from evalsite.review.services import reviews as review_services
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db(transaction=True)

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="row-level locking needs Postgres; SQLite serialises writers (IMMEDIATE)",
)


@pytest.fixture
def team(project):
    users = []
    for name in ("ann", "ben", "cat"):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role=Role.REVIEWER)
        users.append(user)
    return users


@pytest.fixture
def queue(project, team):
    run = make_run(
        project, n_items=1, analyses={"faithfulness": [judged_claims("no", "no")]}
    )
    return queue_create(
        run=run,
        user=team[0],
        query=ResultQuery(sort="item"),
        overlap=2,
        final_rule=FinalRule.MAJORITY,
        blind=True,
    )


def _slow_answers(monkeypatch) -> None:
    """Hold the result's lock a moment after the entry was checked, so the other
    request (whose entry was read before the lock) waits on it."""
    real = review_services._clean_answer

    def slow(**kwargs):
        answer = real(**kwargs)
        time.sleep(0.3)
        return answer

    monkeypatch.setattr(review_services, "_clean_answer", slow)


def _answer_together(queue, users) -> list[int]:
    barrier = threading.Barrier(len(users))
    statuses: list[int] = []

    def answer(user):
        try:
            client = Client()
            client.force_login(user)
            barrier.wait()
            response = client.post(
                f"/api/queues/{queue.pk}/entries/1/reviews",
                {"passed": True, "note": user.username},
                content_type="application/json",
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return sorted(statuses)


@postgres_only
def test_two_reviewers_answering_at_once_both_count_and_decide_once(
    queue, team, monkeypatch
):
    _slow_answers(monkeypatch)
    assert _answer_together(queue, team[:2]) == [201, 201]
    entry = QueueEntry.objects.get(queue=queue, position=1)
    assert (entry.state, entry.answers, entry.answers_pass) == ("decided", 2, 2)
    assert set(Review.objects.values_list("note", flat=True)) == {"ann", "ben"}
    actions = list(
        AuditEvent.objects.filter(result_id=entry.result_id).values_list(
            "action", flat=True
        )
    )
    assert sorted(actions) == sorted(
        ["review.answer", "review.answer", "review.decide", "override.create"]
    )
    result = Result.objects.get(pk=entry.result_id)
    # The judge failed it (no claim supported); both answered pass: one override.
    assert result.reviewed and result.final_passed is True
    assert result.overrides.count() == 1


@postgres_only
def test_an_answer_after_the_deciding_one_is_refused_whole(queue, team, monkeypatch):
    result = QueueEntry.objects.get(queue=queue, position=1).result
    review_services.review_answer(queue=queue, result=result, user=team[0], passed=True)
    _slow_answers(monkeypatch)
    refused: list[str] = []
    real_save = review_services._save_open_entry

    def save(entry):
        try:
            real_save(entry)
        except Exception as exc:
            refused.append(type(exc).__name__)
            raise

    monkeypatch.setattr(review_services, "_save_open_entry", save)
    # Both read the entry open with one answer; the first to lock the result
    # decides it, the other's write finds it decided and rolls back.
    assert _answer_together(queue, team[1:]) == [201, 409]
    assert refused == ["ConflictError"]
    entry = QueueEntry.objects.get(queue=queue, position=1)
    assert (entry.state, entry.answers, entry.answers_pass) == ("decided", 2, 2)
    assert Review.objects.count() == 2
    assert AuditEvent.objects.filter(action="review.decide").count() == 1
    assert AuditEvent.objects.filter(action="review.answer").count() == 2
    result.refresh_from_db()
    assert result.overrides.count() == 1 and result.version == 1
