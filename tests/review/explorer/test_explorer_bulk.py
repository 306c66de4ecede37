"""Bulk actions of the explorer (services): accept, assign, add to a queue, and the
selection they act on (explicit ids checked against the run, or all matching)."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.verdicts import result_accept
from evalsite.review.explorer import bulk
from evalsite.review.explorer.bulk import (
    SKIP_IN_QUEUE,
    SKIP_NOT_SCORED,
    SKIP_REVIEWED,
    assignee_get,
    results_accept,
    results_assign,
    results_enqueue,
)
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import (
    Selection,
    results_selected,
    selection_batches,
)
from evalsite.review.models import QueueEntry, ReviewQueue
from evalsite.review.queues.services import queue_create
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    # Six items × two scorers; faithfulness: items 0, 2, 4 pass, 1, 3, 5 fail.
    analyses = [judged_claims("yes"), judged_claims("no")] * 3
    return make_run(
        project,
        n_items=6,
        kinds=("faithfulness", "hallucination"),
        analyses={"faithfulness": analyses},
    )


@pytest.fixture
def other_run(project):
    return make_run(project, n_items=2)


def _ids(run, **filters):
    return list(
        Result.objects.filter(run=run, **filters)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


# ------------------------------------------------------------------ selection


def test_results_selected_refuses_ids_of_another_run_and_names_them(run, other_run):
    mine, foreign = _ids(run)[:2], _ids(other_run)[:1]
    with pytest.raises(ApplicationError) as info:
        results_selected(run=run, ids=[*mine, *foreign, 10**12])
    message = info.value.message
    assert "2 of the selected results are not results of this run" in message
    assert str(foreign[0]) in message and str(10**12) in message
    assert info.value.field_errors == {"ids": message}


def test_results_selected_sorts_and_drops_repeats(run):
    a, b = _ids(run)[:2]
    assert results_selected(run=run, ids=[b, a, b]) == [a, b]


def test_results_selected_refuses_empty_and_too_many(run, monkeypatch):
    with pytest.raises(ApplicationError, match="at least one"):
        results_selected(run=run, ids=[])
    monkeypatch.setattr("evalsite.review.explorer.selectors.SELECTION_MAX_IDS", 2)
    with pytest.raises(ApplicationError, match="At most 2"):
        results_selected(run=run, ids=_ids(run)[:3])


def test_selection_batches_walk_all_matching_by_id_in_bounded_batches(run, reviewer):
    query = ResultQuery(passed=False)
    batches = list(
        selection_batches(
            run=run, selection=Selection(query=query), user=reviewer, size=4
        )
    )
    expected = _ids(run, final_passed=False)
    assert [len(b) for b in batches] == [4] * (len(expected) // 4) + (
        [len(expected) % 4] if len(expected) % 4 else []
    )
    assert [pk for b in batches for pk in b] == expected


def test_selection_needs_ids_or_query_not_both():
    with pytest.raises(ValueError):
        Selection()
    with pytest.raises(ValueError):
        Selection(ids=(1,), query=ResultQuery())


# ------------------------------------------------------------------ accept


def test_bulk_accept_marks_reviewed_and_audits_each_like_a_single_accept(
    run, reviewer, owner
):
    single, *rest = _ids(run)[:3]
    result_accept(result=Result.objects.get(pk=single), user=reviewer)
    single_event = AuditEvent.objects.get(result_id=single)
    outcome = results_accept(
        run=run, user=reviewer, selection=Selection(ids=tuple(rest))
    )
    assert outcome.done == 2 and outcome.skipped_total == 0
    assert outcome.summary() == "Accepted 2 results."
    for pk in rest:
        result = Result.objects.get(pk=pk)
        assert result.reviewed and result.reviewed_by == reviewer
        assert result.human_passed == result.final_passed
        assert result.version == 1 and result.reviewed_at is not None
        event = AuditEvent.objects.get(result_id=pk)
        # The same event a single accept writes (the bulk flag aside).
        assert event.action == single_event.action == "result.accept"
        assert event.actor == reviewer and event.run_id == run.pk
        assert event.summary == (
            f"rita accepted {'pass' if result.final_passed else 'fail'} on item "
            f"{result.item.number} · {result.run_scorer.name}"
        )
        assert set(event.before) == set(single_event.before)
        assert (
            event.before["reviewed"] is False and event.before["human_passed"] is None
        )
        assert {k: v for k, v in event.after.items() if k != "bulk"} == {
            "final_score": result.final_score,
            "final_passed": result.final_passed,
            "reviewed": True,
            "human_passed": result.final_passed,
        }
        assert event.after["bulk"] is True


def test_bulk_accept_skips_errored_pending_and_reviewed_and_counts_them(run, reviewer):
    errored, pending, reviewed, *fresh = _ids(run)[:6]
    Result.objects.filter(pk=errored).update(status=Result.Status.ERROR)
    Result.objects.filter(pk=pending).update(status=Result.Status.PENDING)
    result_accept(result=Result.objects.get(pk=reviewed), user=reviewer)
    before = Result.objects.get(pk=reviewed).reviewed_at
    selection = Selection(ids=(errored, pending, reviewed, *fresh))
    outcome = results_accept(run=run, user=reviewer, selection=selection)
    assert outcome.done == 3
    assert dict(outcome.skipped) == {SKIP_NOT_SCORED: 2, SKIP_REVIEWED: 1}
    assert outcome.summary() == (
        "Accepted 3 results; skipped 3 (1 already reviewed, "
        "2 not scored (errored, pending or cancelled))."
    )
    assert not Result.objects.filter(pk__in=[errored, pending], reviewed=True).exists()
    assert Result.objects.get(pk=reviewed).reviewed_at == before
    assert AuditEvent.objects.filter(action="result.accept").count() == 1 + 3


def test_bulk_accept_all_matching_a_filter_in_several_batches(
    run, reviewer, monkeypatch
):
    monkeypatch.setattr(bulk, "BULK_BATCH", 2)
    failing = _ids(run, final_passed=False)
    passing = _ids(run, final_passed=True)
    outcome = results_accept(
        run=run, user=reviewer, selection=Selection(query=ResultQuery(passed=False))
    )
    assert outcome.done == len(failing) > 2
    assert set(_ids(run, reviewed=True)) == set(failing)
    assert not Result.objects.filter(pk__in=passing, reviewed=True).exists()
    # Accepting removes rows from "reviewed: no" as it goes; keyset paging still
    # visits each once.
    Result.objects.filter(run=run).update(reviewed=False)
    again = results_accept(
        run=run, user=reviewer, selection=Selection(query=ResultQuery(reviewed=False))
    )
    assert again.done == Result.objects.filter(run=run).count()


def test_bulk_accept_keeps_the_run_aggregates_equal_to_a_recount(run, reviewer):
    scorer = run.run_scorers.get(kind="faithfulness")
    cached = run_aggregates(run_id=run.pk, run_scorer_id=scorer.pk)[0]
    assert cached.reviewed == 0
    results_accept(
        run=run,
        user=reviewer,
        selection=Selection(query=ResultQuery(run_scorer_id=scorer.pk)),
    )
    after = run_aggregates(run_id=run.pk, run_scorer_id=scorer.pk)[0]
    from django.core.cache import cache

    cache.clear()
    recount = run_aggregates(run_id=run.pk, run_scorer_id=scorer.pk)[0]
    assert after.reviewed == recount.reviewed == 6
    assert after.as_dict() == recount.as_dict()


def test_bulk_accept_refuses_another_runs_ids_and_changes_nothing(
    run, other_run, reviewer
):
    selection = Selection(ids=(*_ids(run)[:2], _ids(other_run)[0]))
    with pytest.raises(ApplicationError, match="not results of this run"):
        results_accept(run=run, user=reviewer, selection=selection)
    assert not Result.objects.filter(reviewed=True).exists()
    assert not AuditEvent.objects.exists()


def test_bulk_actions_refuse_a_viewer_and_an_outsider(run, viewer, outsider):
    selection = Selection(ids=tuple(_ids(run)[:1]))
    with pytest.raises(PermissionDenied):
        results_accept(run=run, user=viewer, selection=selection)
    with pytest.raises(PermissionDenied):
        results_assign(run=run, user=viewer, selection=selection, assignee=None)
    with pytest.raises(PermissionDenied):
        results_enqueue(run=run, user=viewer, selection=selection)
    with pytest.raises(Http404):
        results_accept(run=run, user=outsider, selection=selection)
    assert not Result.objects.filter(reviewed=True).exists()
    assert not ReviewQueue.objects.exists()


# ------------------------------------------------------------------ assign


def test_bulk_assign_sets_the_assignee_audits_and_skips_those_already_so(
    run, owner, reviewer
):
    first, second, third = _ids(run)[:3]
    Result.objects.filter(pk=first).update(assignee=reviewer)
    rita = assignee_get(run=run, username="rita")
    outcome = results_assign(
        run=run,
        user=owner,
        selection=Selection(ids=(first, second, third)),
        assignee=rita,
    )
    assert outcome.done == 2 and dict(outcome.skipped) == {
        "already assigned to rita": 1
    }
    assert outcome.summary().startswith("Assigned 2 results; skipped 1")
    assert set(_ids(run, assignee=reviewer)) == {first, second, third}
    event = AuditEvent.objects.get(result_id=second, action="result.assign")
    assert event.before == {"assignee": None}
    assert event.after == {"assignee": "rita", "bulk": True}
    assert Result.objects.get(pk=second).version == 1

    unassigned = results_assign(
        run=run, user=owner, selection=Selection(query=ResultQuery()), assignee=None
    )
    assert unassigned.done == 3 and unassigned.action == "unassign"
    rest = len(_ids(run)) - 3
    assert unassigned.summary() == (
        f"Unassigned 3 results; skipped {rest} ({rest} already unassigned)."
    )
    assert not Result.objects.filter(assignee__isnull=False).exists()


def test_assignee_must_be_a_reviewer_of_the_project(run, viewer, outsider, owner):
    for username in ("victor", "oscar", "nobody"):
        with pytest.raises(ApplicationError) as info:
            assignee_get(run=run, username=username)
        assert "assignee" in info.value.field_errors
    assert assignee_get(run=run, username="olivia") == owner


# ------------------------------------------------------------------ queue


def test_bulk_queue_of_selected_rows_is_a_new_queue_of_just_those(run, reviewer):
    picked = _ids(run)[2:5]
    outcome = results_enqueue(
        run=run, user=reviewer, selection=Selection(ids=tuple(picked)), blind=True
    )
    queue = outcome.queue
    assert outcome.done == 3 and queue.size == 3 and queue.blind
    assert queue.name.startswith("Selected · ")
    assert (
        list(queue.entries.order_by("position").values_list("result_id", flat=True))
        == picked
    )
    assert AuditEvent.objects.filter(action="queue.create").count() == 1


def test_bulk_queue_all_matching_builds_the_filter_queue(run, reviewer):
    outcome = results_enqueue(
        run=run,
        user=reviewer,
        selection=Selection(query=ResultQuery(passed=False)),
        name="fails",
    )
    assert outcome.queue.name == "fails"
    assert set(outcome.queue.entries.values_list("result_id", flat=True)) == set(
        _ids(run, final_passed=False)
    )
    assert outcome.queue.filters == {"final_passed": False}


def test_bulk_queue_appends_to_a_queue_of_the_run_skipping_what_it_holds(run, reviewer):
    ids = _ids(run)
    queue = queue_create(
        run=run, user=reviewer, query=ResultQuery(), result_ids=ids[:2], name="q"
    )
    outcome = results_enqueue(
        run=run, user=reviewer, selection=Selection(ids=tuple(ids[1:4])), queue=queue
    )
    assert outcome.done == 2 and dict(outcome.skipped) == {SKIP_IN_QUEUE: 1}
    queue.refresh_from_db()
    assert queue.size == 4
    assert list(
        QueueEntry.objects.filter(queue=queue)
        .order_by("position")
        .values_list("position", "result_id")
    ) == [(1, ids[0]), (2, ids[1]), (3, ids[2]), (4, ids[3])]
    event = AuditEvent.objects.get(action="queue.append")
    assert event.after["size"] == 4 and event.after["result_ids"] == ids[2:4]


def test_bulk_queue_refuses_a_queue_of_another_run_and_a_stratified_one(
    run, other_run, reviewer
):
    other = queue_create(run=other_run, user=reviewer, query=ResultQuery())
    with pytest.raises(ApplicationError, match="another run"):
        results_enqueue(
            run=run,
            user=reviewer,
            selection=Selection(ids=(_ids(run)[0],)),
            queue=other,
        )
    sample = queue_create(
        run=run, user=reviewer, query=ResultQuery(), source="stratified", pass_share=1
    )
    with pytest.raises(ApplicationError, match="stratified"):
        results_enqueue(
            run=run,
            user=reviewer,
            selection=Selection(ids=(_ids(run)[0],)),
            queue=sample,
        )
    assert other.entries.count() == 2


def test_bulk_queue_append_stops_at_the_queue_limit(run, reviewer, monkeypatch):
    monkeypatch.setattr(bulk, "QUEUE_MAX", 3)
    ids = _ids(run)
    queue = queue_create(
        run=run, user=reviewer, query=ResultQuery(), result_ids=ids[:2], name="q"
    )
    outcome = results_enqueue(
        run=run, user=reviewer, selection=Selection(query=ResultQuery()), queue=queue
    )
    assert outcome.done == 1
    assert outcome.skipped[SKIP_IN_QUEUE] == 2
    assert sum(outcome.skipped.values()) == len(ids) - 1
    assert queue.entries.count() == 3
