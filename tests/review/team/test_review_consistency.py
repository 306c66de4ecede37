"""Figures that follow every review write: agreement after an adjudication, and an
undo that takes back everything its answer created (card, entry counts, export,
agreement)."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evalsite.accounts.models import Role
from evalsite.evals.models import Result
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.housekeeping.services import object_delete
from evalsite.review.models import FinalRule, QueueEntry, Review
from evalsite.review.queues.services import queue_create
from evalsite.review.team.selectors import agreement_report
from evalsite.review.team.services import (
    review_adjudicate,
    review_answer,
    review_answer_withdraw,
)
from tests.conftest import bearer, login
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import make_run, queue_card_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def second(project):
    return MembershipFactory(
        project=project, user=UserFactory(username="sam"), role=Role.REVIEWER
    ).user


def _with_final(report, username):
    stats = {s.username: s for s in report.per_reviewer}[username]
    return stats.with_final, stats.with_final_items


def test_agreement_counts_an_adjudication_made_after_it_was_read(
    client, project, owner, reviewer, second
):
    run = make_run(project, n_items=10)
    queue = queue_create(
        run=run,
        user=owner,
        query=ResultQuery(sort="item"),
        overlap=2,
        final_rule=FinalRule.UNANIMOUS,
    )
    entries = list(QueueEntry.objects.filter(queue=queue).order_by("position"))
    for entry in entries[:9]:
        for user in (reviewer, second):
            review_answer(queue=queue, result=entry.result, user=user, passed=True)
    last = entries[9].result
    review_answer(queue=queue, result=last, user=reviewer, passed=True)
    review_answer(queue=queue, result=last, user=second, passed=False)
    rs = run.run_scorers.get()
    before = agreement_report(run_scorer=rs)
    assert _with_final(before, "rita") == (1.0, 9)
    assert _with_final(before, "sam") == (1.0, 9)
    headers = bearer(owner)
    url = f"/api/runs/{run.pk}/agreement"
    assert client.get(url, **headers).status_code == 200  # cached now, too

    review_adjudicate(queue=queue, result=last, user=owner, passed=True)

    after = agreement_report(run_scorer=rs)
    assert _with_final(after, "rita") == (1.0, 10)
    assert _with_final(after, "sam") == (0.9, 10)
    body = client.get(url, **headers).json()
    per = {r["username"]: r for r in body[0]["per_reviewer"]}
    assert (per["sam"]["with_final"], per["sam"]["with_final_items"]) == (0.9, 10)
    queue_report = agreement_report(queue=queue)
    assert _with_final(queue_report, "sam") == (0.9, 10)


def test_agreement_follows_answers_that_decide_nothing(
    client, project, owner, reviewer, second
):
    """The figures are cached until a review write on the run: an answer that
    decides nothing (no verdict moves), a changed answer, a withdrawal and a deleted
    queue are such writes too, and each shows at once in the API, and on the page
    once its background recount is done (eager here: sent by the first load)."""
    run = make_run(project, n_items=2)
    queue = queue_create(
        run=run,
        user=owner,
        query=ResultQuery(sort="item"),
        overlap=3,
        final_rule=FinalRule.MAJORITY,
    )
    first = QueueEntry.objects.get(queue=queue, position=1).result
    headers = bearer(owner)
    api = f"/api/runs/{run.pk}/agreement"
    page = reverse("review:agreement", args=[project.pk, run.pk])
    login(client, owner)

    def figures() -> tuple[dict, str]:
        body = client.get(api, **headers).json()[0]
        html = client.get(page).content.decode()
        if "Recounting:" in html:  # the latest figures, marked: recounted since
            html = client.get(page).content.decode()
            assert "Recounting:" not in html
        return body, html

    review_answer(queue=queue, result=first, user=reviewer, passed=True)
    body, _ = figures()  # cached: one reviewer, nothing to agree on
    assert [r["username"] for r in body["per_reviewer"]] == ["rita"]
    assert body["percent_agreement"]["items"] == 0

    review_answer(queue=queue, result=first, user=second, passed=False)
    body, html = figures()
    assert body["percent_agreement"] == {
        "value": 0.0,
        "items": 1,
        "ci_low": None,  # one item: no interval
        "ci_high": None,
    }
    assert 'data-reviewer="sam"' in html

    review_answer(queue=queue, result=first, user=second, passed=True)  # changed
    body, _ = figures()
    assert body["percent_agreement"]["value"] == 1.0

    review_answer_withdraw(queue=queue, result=first, user=second)
    body, html = figures()
    assert [r["username"] for r in body["per_reviewer"]] == ["rita"]
    assert 'data-reviewer="sam"' not in html

    object_delete(kind="queues", obj=queue, user=owner)
    body, html = figures()
    assert body["per_reviewer"] == []
    assert 'data-reviewer="rita"' not in html


def test_agreement_follows_a_saved_rescore(project, owner, reviewer):
    """A rescore rewrites judge pass without touching a result's review version:
    'agrees with judge' must still move."""
    from evalsite.evals.results.rescore import run_rescore

    run = make_run(project, n_items=4)
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"))
    for entry in QueueEntry.objects.filter(queue=queue):
        _queue_key(client=None, queue=queue, entry=entry, user=reviewer, key="fail")
    rs = run.run_scorers.get()
    before = {s.username: s for s in agreement_report(run_scorer=rs).per_reviewer}
    run_rescore(
        run=run,
        run_scorer=rs,
        options={**rs.options, "threshold": 0.01},
        user=owner,
        save=True,
    )
    judge_passes = list(
        Result.objects.filter(run_scorer=rs).values_list("judge_passed", flat=True)
    )
    want = sum(p is False for p in judge_passes) / len(judge_passes)  # answers: fail
    after = {s.username: s for s in agreement_report(run_scorer=rs).per_reviewer}
    assert after["rita"].with_judge == pytest.approx(want)
    assert before["rita"].with_judge != after["rita"].with_judge


def _queue_key(*, client, queue, entry, user, key):
    return queue_card_key(queue=queue, position=entry.position, user=user, key=key)


def _export_rows(client, run, user):
    login(client, user)
    response = client.get(f"/api/runs/{run.pk}/export.csv", **bearer(user))
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("key", ["fail", "pass", "accept"])
def test_undo_in_a_queue_retracts_the_answer_everywhere(
    client, project, owner, reviewer, key
):
    run = make_run(project, n_items=2)
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"))
    entry = QueueEntry.objects.get(queue=queue, position=1)
    _queue_key(client=client, queue=queue, entry=entry, user=reviewer, key=key)
    entry.refresh_from_db()
    assert entry.answers == 1
    rs = run.run_scorers.get()
    assert {s.username for s in agreement_report(run_scorer=rs).per_reviewer} == {
        "rita"
    }
    exported = {r["item_index"]: r for r in _export_rows(client, run, owner)}
    assert exported["0"]["answer_count"] == "1"

    card = _queue_key(
        client=client, queue=queue, entry=entry, user=reviewer, key="undo"
    )
    assert b"Not reviewed" in card.content or b"not reviewed" in card.content

    result = Result.objects.get(pk=entry.result_id)
    assert (result.reviewed, result.human_passed) == (False, None)
    entry.refresh_from_db()
    assert (entry.answers, entry.answers_pass, entry.answers_fail) == (0, 0, 0)
    assert not Review.objects.filter(result=result).exists()
    assert agreement_report(run_scorer=rs).per_reviewer == []
    exported = {r["item_index"]: r for r in _export_rows(client, run, owner)}
    assert exported["0"]["answer_count"] == "0"
    assert exported["0"]["answers"] in ("", "[]")


def test_undo_with_nothing_to_undo_says_so(client, project, owner, reviewer):
    run = make_run(project, n_items=1)
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"))
    entry = QueueEntry.objects.get(queue=queue, position=1)
    card = _queue_key(
        client=client, queue=queue, entry=entry, user=reviewer, key="undo"
    )
    assert b"Nothing of yours to undo" in card.content


def test_a_card_write_on_a_stale_version_is_refused_with_the_newest_state(
    project, owner, reviewer, second
):
    """Two reviewers on one card: the second answer was pressed on a card that did
    not show the first one; it is refused and the card shows the first answer."""
    run = make_run(project, n_items=1)
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"))
    entry = QueueEntry.objects.get(queue=queue, position=1)
    shown = Result.objects.get(pk=entry.result_id).version
    queue_card_key(queue=queue, position=1, user=reviewer, key="fail", version=shown)
    card = queue_card_key(
        queue=queue, position=1, user=second, key="pass", version=shown
    )
    html = card.content.decode()
    assert "changed since you loaded it" in html
    result = Result.objects.get(pk=entry.result_id)
    assert (result.human_passed, result.reviewed_by_id) == (False, reviewer.pk)
    assert f'name="version" value="{result.version}"' in html
    assert not Review.objects.filter(reviewer=second).exists()


def test_u_undoes_only_your_own_change(project, owner, reviewer, second):
    run = make_run(project, n_items=1)
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"))
    entry = QueueEntry.objects.get(queue=queue, position=1)
    queue_card_key(queue=queue, position=1, user=reviewer, key="fail")
    card = queue_card_key(queue=queue, position=1, user=second, key="undo")
    assert "Nothing of yours to undo" in card.content.decode()
    result = Result.objects.get(pk=entry.result_id)
    assert (result.reviewed, result.human_passed) == (True, False)
    assert Review.objects.filter(reviewer=reviewer).count() == 1
    # The author's own u still undoes it.
    queue_card_key(queue=queue, position=1, user=reviewer, key="undo")
    result.refresh_from_db()
    assert (result.reviewed, result.human_passed) == (False, None)
