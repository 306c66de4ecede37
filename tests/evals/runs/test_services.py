from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from evalsite.accounts.services import project_create
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.evals import conf
from evalsite.evals.engine.claims import (
    new_claim_token,
    results_claim,
    results_claimable_at_most,
)
from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeCall, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from scoring import overridable_count
from tests.evals.conftest import judge_control, judge_stats, support_rows
from tests.factories import DatasetFactory, ProjectFactory, ScorerConfigFactory

pytestmark = pytest.mark.django_db


def _start(project, owner, dataset, scorers, capture):
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    run.refresh_from_db()
    return run


def test_run_start_snapshots_scorers_and_creates_pending_results(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    assert run.total == 6
    assert Result.objects.filter(run=run, status=Result.Status.PENDING).count() == 6
    snapshot = run.run_scorers.get(kind="faithfulness")
    assert snapshot.judge_snapshot["model"] == "offline-judge"
    assert "api_key" not in str(snapshot.judge_snapshot)


def test_run_start_rejects_a_scorer_of_another_project(project, owner, dataset):
    foreign = ScorerConfigFactory(
        project=ProjectFactory(), name="X", kind="content_similarity", options={}
    )
    with pytest.raises(ApplicationError) as exc:
        run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[foreign]
        )
    assert "scorer_ids" in exc.value.field_errors


def test_run_start_rejects_an_empty_dataset(project, owner, scorers):
    empty = DatasetFactory(project=project, name="empty", rows=[])
    with pytest.raises(ApplicationError) as exc:
        run_services.run_start(
            project=project, user=owner, dataset=empty, scorers=scorers
        )
    assert "dataset_id" in exc.value.field_errors


def test_run_completes_and_stores_every_judge_step(
    project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    run = _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    assert run.status == Run.Status.DONE
    assert run.finished_at is not None
    results = Result.objects.filter(run=run)
    assert results.count() == 6
    for result in results:
        assert result.status == Result.Status.OK
        assert result.judge_score is not None
        assert result.final_score == result.judge_score
        assert result.final_passed == result.judge_passed
        assert result.final_analysis == result.analysis
        assert result.overridable_count == overridable_count(
            result.run_scorer.kind, result.analysis
        )
    faithful = results.filter(run_scorer__kind="faithfulness")
    for result in faithful:
        steps = list(result.calls.values_list("step", flat=True))
        assert steps[0] == "claims" and steps[-1] == "reason"
        call = result.calls.first()
        assert call.messages and call.raw_response and call.prompt_tokens > 0
        # Stored as JSON (the review page shows each message), in the order sent.
        assert [m["role"] for m in call.messages][-1] == "user"
        assert call.created_at is not None and not call.cache_hit
    # The non-LLM scorer makes no judge call.
    assert not JudgeCall.objects.filter(
        result__run_scorer__kind="content_similarity"
    ).exists()
    # The faithful first case scores high, the contradicting second one low.
    by_index = {r.item.index: r.judge_score for r in faithful}
    assert by_index[0] > by_index[1]


def test_identical_calls_are_answered_from_the_cache(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    before = judge_stats(offline_judge)["chat_completions"]
    second = _start(
        project, owner, dataset, scorers, django_capture_on_commit_callbacks
    )
    assert judge_stats(offline_judge)["chat_completions"] == before
    calls = JudgeCall.objects.filter(result__run=second)
    assert calls.exists() and all(c.cache_hit for c in calls)


def test_another_projects_identical_calls_are_judged_again_not_cached(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    other = project_create(user=owner, name="Other team")
    other_judge = judge_services.judge_create_offline(other)
    other_judge.base_url = offline_judge.base_url
    other_judge.save(update_fields=["base_url"])
    other_scorer = scorer_services.scorer_create(
        project=other,
        user=owner,
        name="Faithfulness",
        kind="faithfulness",
        judge=other_judge,
    )
    before = judge_stats(offline_judge)["chat_completions"]
    second = _start(
        other,
        owner,
        DatasetFactory(project=other, name="support", rows=support_rows(3)),
        [other_scorer],
        django_capture_on_commit_callbacks,
    )
    # Same texts, same judge settings: paid again, and nothing says they were seen.
    assert judge_stats(offline_judge)["chat_completions"] > before
    calls = JudgeCall.objects.filter(result__run=second)
    assert calls.exists() and not any(c.cache_hit for c in calls)


def test_a_second_dispatch_neither_duplicates_nor_calls_again(
    project, owner, dataset, scorers, offline_judge
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_dispatch(run_id=run.pk).judged == run.total
    calls = JudgeCall.objects.filter(result__run=run).count()
    completions = judge_stats(offline_judge)["chat_completions"]
    # A redelivered dispatch message while the run still shows running.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    second = run_dispatch(run_id=run.pk)
    assert (second.judged, second.errors) == (0, 0)
    assert JudgeCall.objects.filter(result__run=run).count() == calls
    assert judge_stats(offline_judge)["chat_completions"] == completions


def test_a_claim_respects_a_live_lease_and_takes_over_an_expired_one(
    project, owner, dataset, scorers, frozen_clock
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    result = run.results.first()

    def claim() -> bool:
        return bool(
            results_claim(
                run_id=run.pk, token=new_claim_token(), count=1, ids=[result.pk]
            )
        )

    assert claim()
    assert not claim()
    frozen_clock.shift(conf.lease_seconds() - 1)
    assert not claim()  # the lease still runs
    frozen_clock.shift(2)
    assert claim()
    result.refresh_from_db()
    assert result.attempts == 2


def test_the_claimable_count_stops_past_its_limit_and_skips_live_leases(
    project, owner, dataset, scorers, frozen_clock
):
    """The dispatcher's end-game look: how many results a claim could still take,
    counted no further than it needs."""
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    total = run.results.count()
    assert total >= 4

    def left(limit: int) -> int:
        return results_claimable_at_most(run_id=run.pk, limit=limit)

    assert left(total) == total
    assert left(2) == 3  # "more than 2"
    held = results_claim(run_id=run.pk, token=new_claim_token(), count=2)
    assert left(total) == total - 2
    Result.objects.filter(pk=held[0].pk).update(status=Result.Status.OK)
    frozen_clock.shift(conf.lease_seconds() + 1)
    # The other claim's lease has expired: a claim could take that result again.
    assert left(total) == total - 1


def test_case_error_marks_the_result_with_the_field(
    project, owner, judge, scorers, django_capture_on_commit_callbacks
):
    dataset = DatasetFactory(project=project, name="bad", rows=support_rows(2))
    dataset.items.filter(index=0).update(output="")
    run = _start(
        project, owner, dataset, scorers[:1], django_capture_on_commit_callbacks
    )
    result = Result.objects.get(run=run, item__index=0)
    assert result.status == Result.Status.ERROR
    assert "output" in result.error
    assert Result.objects.get(run=run, item__index=1).status == Result.Status.OK
    assert run.status == Run.Status.DONE_WITH_ERRORS


def test_a_scorer_needing_a_field_no_item_has_is_refused_before_the_run(
    project, owner, judge, scorers
):
    dataset = DatasetFactory(project=project, name="bad", rows=support_rows(2))
    dataset.items.update(output="")
    with pytest.raises(ApplicationError) as caught:
        run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers[:1]
        )
    assert "needs output, which no item of" in caught.value.field_errors["scorer_ids"]
    assert not Run.objects.filter(dataset=dataset).exists()


def test_run_cancel_cancels_pending_results_and_work_stops(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    run_services.run_cancel(run=run, user=owner)
    assert run.status == Run.Status.CANCELLED
    assert set(run.results.values_list("status", flat=True)) == {
        Result.Status.CANCELLED
    }
    assert results_claim(run_id=run.pk, token=new_claim_token(), count=10) == []
    with pytest.raises(ConflictError):
        run_services.run_cancel(run=run, user=owner)


def test_run_retry_failed_requeues_only_the_errors(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    judge_control(offline_judge, script=["400"])
    run = _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    ok_before = dict(
        Result.objects.filter(run=run, status=Result.Status.OK).values_list(
            "pk", "updated_at"
        )
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert run_services.run_retry_failed(run=run, user=owner) == 1
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert (
        dict(Result.objects.filter(pk__in=ok_before).values_list("pk", "updated_at"))
        == ok_before
    )
    with pytest.raises(ApplicationError, match="no failed"):
        run_services.run_retry_failed(run=run, user=owner)


def test_run_recover_requeues_results_of_a_dead_worker(
    project, owner, dataset, scorers, frozen_clock
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, started_at=timezone.now()
    )
    Result.objects.filter(run=run).update(
        claimed_at=timezone.now() - timedelta(hours=1),
        claimed_by="dead:1:x",
        attempts=1,
    )
    assert run_services.run_recover(run_id=run.pk) == 3
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert set(run.results.values_list("attempts", flat=True)) == {2}
    # A second tick right away is skipped: one watchdog tick per interval.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_services.run_recover(run_id=run.pk) is None
    # The next interval's tick runs (and finds nothing lost).
    frozen_clock.shift(conf.monitor_interval())
    assert run_services.run_recover(run_id=run.pk) == 0


def test_run_finish_if_complete_waits_for_pending_results(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    assert not run_services.run_finish_if_complete(run_id=run.pk)
    Result.objects.filter(run=run).update(status=Result.Status.OK)
    Result.objects.filter(pk=run.results.first().pk).update(status=Result.Status.ERROR)
    assert run_services.run_finish_if_complete(run_id=run.pk)
    assert not run_services.run_finish_if_complete(run_id=run.pk)  # once only
    run.refresh_from_db()
    assert run.status == Run.Status.DONE_WITH_ERRORS


def test_run_preview_renders_the_first_prompt_and_extrapolates(
    project, owner, judge, scorers
):
    dataset = DatasetFactory(project=project, name="big", rows=support_rows(120))
    judge.price_per_1k_input = Decimal("0.5")
    judge.price_per_1k_output = Decimal("1.5")
    judge.save()
    preview = run_services.run_preview(dataset=dataset, scorers=scorers)
    faithful, similarity = preview.scorers
    first = faithful.prompts[0]
    assert first["step"] == "claims"
    assert (
        "Refunds are processed within 5 business days."
        in first["messages"][-1]["content"]
    )
    assert [p["step"] for p in faithful.prompts[1:]] == ["verdicts", "reason"]
    assert faithful.calls == 360  # 3 judge calls per item x 120 items
    assert faithful.prompt_tokens > 0
    expected = (
        Decimal("0.5") * faithful.prompt_tokens
        + Decimal("1.5") * faithful.completion_tokens
    ) / 1000
    assert faithful.cost == expected
    assert (similarity.calls, similarity.prompts, similarity.cost) == (0, [], None)
    assert preview.results == 240


def test_viewer_cannot_reach_write_lookups(project, viewer, dataset, scorers):
    from evalsite.evals.scorers.selectors import scorer_get_for_user

    with pytest.raises(PermissionDenied):
        scorer_get_for_user(user=viewer, pk=scorers[0].pk, write=True)


def test_results_store_writes_a_batch_and_skips_a_result_whose_claim_was_lost(
    project, owner, dataset, scorers
):
    """Outcomes are written a batch per transaction: each one iff its own claim still
    holds, so a result the watchdog handed to another dispatcher is not overwritten."""
    from evalsite.evals.engine.claims import Outcome, results_store
    from scoring import JudgeResult

    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    token = new_claim_token()
    held = results_claim(run_id=run.pk, token=token, count=3)
    assert len(held) == 3
    lost = held[2]
    other = new_claim_token()
    Result.objects.filter(pk=lost.pk).update(claimed_by=other)

    def judged(result):
        return JudgeResult(
            kind=result.run_scorer.kind,
            score=0.5,
            passed=True,
            reason="half",
            analysis={"verdicts": []},
            steps=[],
        )

    written = results_store(
        token,
        [
            Outcome(held[0].pk, judged(held[0]), []),
            Outcome(held[1].pk, None, [], error="judge said no"),
            Outcome(lost.pk, judged(lost), []),
        ],
    )
    assert written == [True, True, False]
    first, second, third = (Result.objects.get(pk=r.pk) for r in held)
    assert (first.status, first.final_score, first.claimed_by) == ("ok", 0.5, "")
    assert (second.status, second.error) == ("error", "judge said no")
    assert (third.status, third.claimed_by) == ("pending", other)


def test_a_failed_batch_write_reaches_every_result_waiting_on_it():
    """The store batcher hands a database error to each result of the batch (the
    dispatcher then gives them back), and the next batch is written as usual."""
    import asyncio

    from django.db import OperationalError

    from evalsite.evals.engine.claims import Outcome
    from evalsite.evals.engine.dispatch import _StoreBatcher

    calls: list[list[int]] = []

    async def db(fn, token, outcomes):
        calls.append([o.result_id for o in outcomes])
        await asyncio.sleep(0)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return [o.result_id != 13 for o in outcomes]

    async def scenario():
        batcher = _StoreBatcher(db, "token")
        first = asyncio.gather(
            *(batcher.store(Outcome(i, None, [])) for i in (1, 2)),
            return_exceptions=True,
        )
        failed = await first
        later = await asyncio.gather(
            *(batcher.store(Outcome(i, None, [])) for i in (12, 13))
        )
        return failed, later

    failed, later = asyncio.run(scenario())
    assert all(isinstance(f, OperationalError) for f in failed)
    assert later == [True, False]
    assert calls == [[1, 2], [12, 13]]


@pytest.mark.django_db(transaction=True)
def test_the_lease_heartbeat_skips_a_result_being_stored_instead_of_waiting(
    project, owner, dataset, scorers
):
    """A heartbeat that waited for rows a store batch held deadlocked with it (each
    stalled the store for a second); it now extends the other leases and leaves the
    held row, whose lease the store ends anyway."""
    import threading

    from django.db import connection, transaction

    from evalsite.evals.engine.claims import _Heartbeat

    if connection.vendor != "postgresql":
        pytest.skip("row locks: Postgres")
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    token = new_claim_token()
    held, other = (r.pk for r in results_claim(run_id=run.pk, token=token, count=2))
    long_ago = timezone.now() - timedelta(minutes=5)
    Result.objects.filter(pk__in=[held, other]).update(claimed_at=long_ago)
    locked, release = threading.Event(), threading.Event()

    def store_in_progress() -> None:
        try:
            with transaction.atomic():
                Result.objects.select_for_update().get(pk=held)
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    def beat() -> None:
        try:
            beater.beat()
        finally:
            connection.close()

    beater = _Heartbeat()
    beater.held = {held: token, other: token}
    storing = threading.Thread(target=store_in_progress)
    storing.start()
    assert locked.wait(10)
    beating = threading.Thread(target=beat)
    beating.start()
    beating.join(10)
    waited = beating.is_alive()
    release.set()
    storing.join(10)
    beating.join(10)
    assert not waited, "the heartbeat waited for the row being stored"
    leases = dict(
        Result.objects.filter(pk__in=[held, other]).values_list("pk", "claimed_at")
    )
    assert leases[held] == long_ago
    assert leases[other] > long_ago


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_dispatcher_returns_as_its_loop_ends_not_at_its_next_poll(
    project, owner, dataset, scorers, monkeypatch
):
    """The thread serving a dispatcher's database work is woken when the event loop
    ends, even with extra database threads waiting on the same queue (one wake-up
    alone went to one of them, and a test sat past pytest's 300 s): with a poll of an
    hour, the dispatch still returns."""
    from django.db import connection

    from evalsite.evals.engine import dispatch

    if connection.vendor != "postgresql":
        pytest.skip("extra database threads: Postgres")
    monkeypatch.setattr(dispatch, "_SERVE_POLL_SECONDS", 3600)
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    outcome = dispatch.run_dispatch_here(run_id=run.pk)
    run.refresh_from_db()
    assert outcome.judged == run.total
    assert run.status == Run.Status.DONE
