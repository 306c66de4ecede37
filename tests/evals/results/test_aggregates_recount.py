"""run_aggregates against a plain recount of the rows, through any sequence of reviews.

The aggregates count the judge side once per finished run (cached) and the reviewed or
overridden results on every request; these tests hold that split to a row-by-row
recount after random overrides, undos, accepts, human pass/fail answers, rescores and
retries, and check that an override no longer recounts the whole run.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalsite.accounts.models import Role
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Override, Result, Run
from evalsite.evals.results import aggregates
from evalsite.evals.results.aggregates import bin_of, run_aggregates
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import (
    override_create,
    override_revert,
    result_accept,
    result_set_human_pass,
)
from evalsite.evals.runs.services import run_finish_if_complete, run_retry_failed
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import FinalRule, QueueEntry
from evalsite.review.queues.services import queue_create
from evalsite.review.team.services import review_answer
from tests.factories import MembershipFactory, UserFactory
from tests.review.builders import make_run


def _claims(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(1, 5)
    return {
        "claims": [f"claim {i}" for i in range(n)],
        "verdicts": [
            {
                "claim": f"claim {i}",
                "verdict": rng.choice(["yes", "no", "unsure"]),
                "reason": "r",
            }
            for i in range(n)
        ],
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _recount(run_scorer_id: int, scale: float = 1.0) -> dict[str, Any]:
    """The aggregates the slow, obvious way: one Python pass over every row, and the
    override table itself for the override counts (faithfulness: one overridable
    verdict per claim)."""
    rows = list(Result.objects.filter(run_scorer_id=run_scorer_id))
    ok = [r for r in rows if r.status == Result.Status.OK]
    reviewed = [r for r in ok if r.reviewed]
    matrix = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for r in reviewed:
        if r.judge_passed is None or r.final_passed is None:
            continue
        if r.judge_passed:
            matrix["tp" if r.final_passed else "fp"] += 1
        else:
            matrix["fn" if r.final_passed else "tn"] += 1
    active = Override.objects.filter(
        result__run_scorer_id=run_scorer_id,
        result__status=Result.Status.OK,
        reverted_at__isnull=True,
    )
    judge_hist, final_hist = [0] * 10, [0] * 10
    for r in ok:
        if r.judge_score is not None and r.final_score is not None:
            judge_hist[bin_of(r.judge_score, scale)] += 1
            final_hist[bin_of(r.final_score, scale)] += 1
    return {
        "total": len(rows),
        "ok": len(ok),
        "errors": sum(r.status == Result.Status.ERROR for r in rows),
        "pending": sum(r.status == Result.Status.PENDING for r in rows),
        "judge_mean": _mean([r.judge_score for r in ok if r.judge_score is not None]),
        "final_mean": _mean([r.final_score for r in ok if r.final_score is not None]),
        "human_mean": _mean(
            [r.final_score for r in reviewed if r.final_score is not None]
        ),
        "judge_pass_rate": _mean(
            [float(r.judge_passed) for r in ok if r.judge_passed is not None]
        ),
        "final_pass_rate": _mean(
            [float(r.final_passed) for r in ok if r.final_passed is not None]
        ),
        "reviewed": len(reviewed),
        "overridden": sum(r.overridden for r in ok),
        "matrix": matrix,
        "judge_hist": judge_hist,
        "final_hist": final_hist,
        "active_overrides": active.count(),
        "verdict_flips": active.filter(counts_as_flip=True).count(),
        "verdict_total": sum(len(r.analysis["verdicts"]) for r in reviewed),
    }


def _assert_matches_recount(run: Run) -> None:
    rs = run.run_scorers.get()
    agg = run_aggregates(run_id=run.pk)[0]
    want = _recount(rs.pk)
    got = {
        "total": agg.total,
        "ok": agg.ok,
        "errors": agg.errors,
        "pending": agg.pending,
        "judge_mean": agg.judge_mean,
        "final_mean": agg.final_mean,
        "human_mean": agg.human_mean,
        "judge_pass_rate": agg.judge_pass_rate,
        "final_pass_rate": agg.final_pass_rate,
        "reviewed": agg.reviewed,
        "overridden": agg.overridden,
        "matrix": agg.agreement.matrix,
        "judge_hist": agg.histogram.judge,
        "final_hist": agg.histogram.final,
        "active_overrides": agg.active_overrides,
        "verdict_flips": agg.verdict_flips,
        "verdict_total": agg.verdict_total,
    }
    for key in ("judge_mean", "final_mean", "human_mean"):
        if want[key] is not None:
            assert got[key] == pytest.approx(want[key], abs=1e-9), key
            got[key] = want[key]
    assert got == want


def _random_step(rng: random.Random, run: Run, user: Any) -> str:
    results = list(
        Result.objects.filter(run=run, status=Result.Status.OK).order_by("pk")
    )
    result = rng.choice(results)
    action = rng.choice(
        ["verdict", "verdict", "score", "pass", "undo", "accept", "p/f"]
    )
    try:
        _apply(rng, action, run, result, user)
    except ApplicationError as exc:
        # A refused change (e.g. "already 'no'") must leave every number as it was.
        return f"{action} refused: {exc}"
    return action


def _apply(
    rng: random.Random, action: str, run: Run, result: Result, user: Any
) -> None:
    if action == "verdict":
        n = len(result.final_analysis["verdicts"])
        override_create(
            result=result,
            user=user,
            kind="verdict",
            path=f"verdicts.{rng.randrange(n)}.verdict",
            value=rng.choice(["yes", "no", "unsure"]),
        )
    elif action == "score":
        override_create(
            result=result, user=user, kind="score", value=round(rng.random(), 2)
        )
    elif action == "pass":
        override_create(result=result, user=user, kind="pass", value=rng.random() < 0.5)
    elif action == "undo":
        active = list(
            Override.objects.filter(result__run=run, reverted_at__isnull=True)
        )
        if active:
            override_revert(override=rng.choice(active), user=user)
    elif action == "accept":
        result_accept(result=result, user=user)
    else:
        result_set_human_pass(result=result, user=user, passed=rng.random() < 0.5)


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_aggregates_equal_a_recount_through_random_reviews(
    project, reviewer, seed, django_capture_on_commit_callbacks
):
    rng = random.Random(seed)
    n = 40
    run = make_run(
        project,
        kinds=["faithfulness"],
        n_items=n,
        analyses={"faithfulness": [_claims(rng) for _ in range(n)]},
    )
    errored = list(Result.objects.filter(run=run).order_by("pk")[:3])
    Result.objects.filter(pk__in=[r.pk for r in errored]).update(
        status=Result.Status.ERROR, error="judge timed out"
    )
    _assert_matches_recount(run)
    rs = run.run_scorers.get()
    for step in range(60):
        # Run the commit hooks, as a real request does: the cached review side is
        # then carried from version to version by each change, not recounted.
        with django_capture_on_commit_callbacks(execute=True):
            action = _random_step(rng, run, reviewer)
        try:
            _assert_matches_recount(run)
        except AssertionError as exc:
            raise AssertionError(f"after step {step} ({action}): {exc}") from exc
        if step == 30:
            # A saved what-if rescore rewrites the judge side under new options.
            run.refresh_from_db()
            rs.refresh_from_db()
            run_rescore(
                run=run,
                run_scorer=rs,
                options={**rs.options, "threshold": 0.3},
                user=reviewer,
                save=True,
            )
            _assert_matches_recount(run)


def _grouped_reads(queries: list[dict[str, Any]]) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if 'FROM "evals_result"' in q["sql"] and "GROUP BY" in q["sql"]
    ]


@pytest.mark.django_db
def test_override_on_a_finished_run_counts_nothing_again(
    project, reviewer, django_capture_on_commit_callbacks
):
    run = make_run(project, kinds=["faithfulness"], n_items=5)
    first = run_aggregates(run_id=run.pk)[0]
    result = Result.objects.filter(run=run).first()
    with django_capture_on_commit_callbacks(execute=True):
        override_create(
            result=result,
            user=reviewer,
            kind="verdict",
            path="verdicts.1.verdict",
            value="yes",
        )
    with CaptureQueriesContext(connection) as ctx:
        after = run_aggregates(run_id=run.pk)[0]
    # Judge side cached with the finished run, review side carried by the change.
    assert _grouped_reads(ctx.captured_queries) == []
    # One claim of three supported scores 0.33; the flip makes it two of three, 0.67.
    assert first.final_mean == pytest.approx(0.33)
    assert after.final_mean == pytest.approx((4 * 0.33 + 0.67) / 5)
    assert after.judge_mean == first.judge_mean


@pytest.mark.django_db
def test_running_run_is_counted_afresh_every_time(project):
    run = make_run(project, kinds=["faithfulness"], n_items=4, status="running")
    Result.objects.filter(run=run).update(
        status=Result.Status.PENDING,
        judge_score=None,
        judge_passed=None,
        final_score=None,
        final_passed=None,
    )
    assert run_aggregates(run_id=run.pk)[0].pending == 4
    # A worker finishes one result: the next read sees it (nothing cached mid-run).
    one = Result.objects.filter(run=run).first()
    Result.objects.filter(pk=one.pk).update(
        status=Result.Status.OK,
        judge_score=0.5,
        judge_passed=True,
        final_score=0.5,
        final_passed=True,
    )
    agg = run_aggregates(run_id=run.pk)[0]
    assert (agg.pending, agg.ok, agg.judge_mean) == (3, 1, 0.5)


@pytest.mark.django_db
def test_retry_of_a_finished_run_is_counted_when_it_finishes_again(project, reviewer):
    run = make_run(project, kinds=["faithfulness"], n_items=4)
    failed = Result.objects.filter(run=run).first()
    Result.objects.filter(pk=failed.pk).update(
        status=Result.Status.ERROR, error="rate limited"
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.DONE_WITH_ERRORS, finished_at=timezone.now()
    )
    before = run_aggregates(run_id=run.pk)[0]
    assert (before.errors, before.error_reasons) == (1, [("rate limited", 1)])
    run.refresh_from_db()
    assert run_retry_failed(run=run, user=reviewer) == 1
    # The retried task succeeds (written as the worker writes it) and the run finishes.
    Result.objects.filter(pk=failed.pk).update(
        status=Result.Status.OK,
        error="",
        judge_score=1.0,
        judge_passed=True,
        final_score=1.0,
        final_passed=True,
    )
    assert run_finish_if_complete(run_id=run.pk)
    after = run_aggregates(run_id=run.pk)[0]
    assert (after.errors, after.ok, after.error_reasons) == (0, 4, [])
    assert after.judge_mean == pytest.approx((3 * 0.33 + 1.0) / 4)
    _assert_matches_recount(run)


@pytest.mark.django_db
def test_a_review_written_while_counting_is_not_cached_as_the_old_version(
    project, reviewer, django_capture_on_commit_callbacks
):
    """The review side is cached only if its version did not move during the count."""
    run = make_run(project, kinds=["faithfulness"], n_items=3)
    result = Result.objects.filter(run=run).first()
    real_version_now = aggregates._review_version_now

    def review_meanwhile(run_scorer_id: int) -> int:
        # Another reviewer's override commits between our count and our check.
        if not Override.objects.exists():
            with django_capture_on_commit_callbacks(execute=True):
                override_create(result=result, user=reviewer, kind="pass", value=True)
        return real_version_now(run_scorer_id)

    aggregates._review_version_now = review_meanwhile
    try:
        stale = run_aggregates(run_id=run.pk)[0]
    finally:
        aggregates._review_version_now = real_version_now
    assert stale.overridden == 0  # counted before the override …
    fresh = run_aggregates(run_id=run.pk)[0]
    assert fresh.overridden == 1  # … and not served again afterwards
    _assert_matches_recount(run)


@pytest.mark.django_db
def test_cache_outage_costs_a_recount_not_an_error(project, reviewer, monkeypatch):
    run = make_run(project, kinds=["faithfulness"], n_items=3)

    def down(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("cache is restarting")

    monkeypatch.setattr(aggregates.cache, "get", down)
    monkeypatch.setattr(aggregates.cache, "set", down)
    override_create(
        result=Result.objects.filter(run=run).first(),
        user=reviewer,
        kind="pass",
        value=True,
    )
    assert run_aggregates(run_id=run.pk)[0].overridden == 1
    _assert_matches_recount(run)


@pytest.mark.django_db
def test_overlap_answers_keep_the_aggregates_a_recount(
    project, reviewer, django_capture_on_commit_callbacks
):
    """Third answers in an overlap-3 queue apply the majority: after each answer the
    aggregates (the review side carried from the cache by the change) equal a
    recount, and once every entry is decided nothing is counted again."""
    rng = random.Random(7)
    n = 6
    run = make_run(
        project,
        kinds=["faithfulness"],
        n_items=n,
        analyses={"faithfulness": [_claims(rng) for _ in range(n)]},
    )
    others = [
        MembershipFactory(
            project=project, user=UserFactory(username=name), role=Role.REVIEWER
        ).user
        for name in ("bea", "cyd")
    ]
    queue = queue_create(
        run=run,
        user=reviewer,
        query=ResultQuery(sort="item"),
        overlap=3,
        final_rule=FinalRule.MAJORITY,
    )
    _assert_matches_recount(run)  # caches both sides
    for entry in QueueEntry.objects.filter(queue=queue).order_by("position"):
        for user in (reviewer, *others):
            with django_capture_on_commit_callbacks(execute=True):
                review_answer(
                    queue=queue,
                    result=entry.result,
                    user=user,
                    passed=rng.random() < 0.5,
                )
            _assert_matches_recount(run)
    assert not QueueEntry.objects.filter(
        queue=queue, state=QueueEntry.State.OPEN
    ).exists()
    with CaptureQueriesContext(connection) as ctx:
        run_aggregates(run_id=run.pk)
    assert _grouped_reads(ctx.captured_queries) == []
