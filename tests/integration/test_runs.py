"""Runs on a real Celery worker, the configured broker and the offline judge over HTTP."""

from __future__ import annotations

import httpx
import pytest
from django.conf import settings
from django.db.models import Count

from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeCall, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.evals.conftest import support_rows
from tests.factories import (
    DatasetFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)
from tests.integration.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Short leases so a killed worker's results are handed out again within seconds.
WORKER_ENV = {"EVALS_RESULT_LEASE_SECONDS": "4"}
TIMEOUT = 300
# Celery's filesystem transport (no REDIS_URL) polls its folder once a second by
# default, so a worker takes at most `concurrency` tasks per second: use more slots
# there to keep these tests short.
CONCURRENCY = 4 if settings.REDIS_URL else 12


def _stats(server) -> dict:
    return httpx.get(server.base_url.removesuffix("/v1") + "/_stats", timeout=5).json()


def _setup(server, *, items: int, kinds: list[str], max_concurrency: int = 16):
    project = ProjectFactory()
    user = UserFactory()
    MembershipFactory(project=project, user=user, role="owner")
    judge = judge_services.judge_create_offline(project)
    judge.base_url = server.base_url
    judge.max_concurrency = max_concurrency
    judge.save()
    dataset = DatasetFactory(project=project, name="support", rows=support_rows(items))
    scorers = [
        scorer_services.scorer_create(
            project=project, user=user, name=kind, kind=kind, judge=judge
        )
        for kind in kinds
    ]
    return project, user, dataset, scorers


def _finished(run: Run) -> bool:
    run.refresh_from_db()
    return run.is_finished


def _assert_complete_once(run: Run, expected: int) -> None:
    results = Result.objects.filter(run=run)
    assert results.count() == expected
    assert not results.filter(status=Result.Status.PENDING).exists()
    # One row per (item, scorer) — and at most one stored call per judge step.
    dupes = (
        results.values("item_id", "run_scorer_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not dupes.exists()
    twice = (
        JudgeCall.objects.filter(result__run=run)
        .values("result_id", "step")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not twice.exists(), list(twice[:5])


def test_200_items_with_3_scorers_end_with_600_results(start_worker, judge_server):
    server = judge_server(latency_ms=2)
    project, user, dataset, scorers = _setup(
        server, items=200, kinds=["faithfulness", "factuality", "content_similarity"]
    )
    worker = start_worker(concurrency=CONCURRENCY, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    assert wait_until(lambda: _finished(run), timeout=TIMEOUT, interval=0.5), (
        worker.log()[-3000:]
    )
    assert run.status == Run.Status.DONE
    _assert_complete_once(run, 600)
    assert Result.objects.filter(run=run, status=Result.Status.OK).count() == 600
    faithful = Result.objects.filter(run=run, run_scorer__kind="faithfulness")
    assert all(r.calls.exists() for r in faithful[:20])


def test_flaky_judge_every_result_ends_ok_or_with_a_message(start_worker, judge_server):
    server = judge_server(latency_ms=2, error_rate=0.2, malformed_rate=0.1, seed=7)
    project, user, dataset, scorers = _setup(
        server, items=60, kinds=["faithfulness", "factuality"]
    )
    worker = start_worker(concurrency=CONCURRENCY, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    assert wait_until(lambda: _finished(run), timeout=TIMEOUT, interval=0.5), (
        worker.log()[-3000:]
    )
    assert run.status in (Run.Status.DONE, Run.Status.DONE_WITH_ERRORS)
    _assert_complete_once(run, 120)
    results = Result.objects.filter(run=run)
    assert set(results.values_list("status", flat=True)) <= {"ok", "error"}
    assert results.filter(status="ok").count() > 60
    for result in results.filter(status="error"):
        assert result.error.strip()
        assert result.judge_score is None
    # The judge really failed sometimes, and the client retried.
    stats = _stats(server)
    assert stats["by_status"].get("500", 0) + stats["by_status"].get("429", 0) > 0


def test_worker_killed_mid_run_leaves_it_complete_without_duplicates(
    start_worker, judge_server
):
    # Slow judge calls (3 x 200 ms per faithfulness result) so work is in flight.
    server = judge_server(latency_ms=200)
    project, user, dataset, scorers = _setup(
        server, items=60, kinds=["faithfulness", "content_similarity"]
    )
    first = start_worker(concurrency=CONCURRENCY, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    results = Result.objects.filter(run=run)
    in_flight = results.filter(status=Result.Status.PENDING, claimed_at__isnull=False)
    assert wait_until(
        lambda: results.exclude(status="pending").count() >= 10 and in_flight.exists(),
        timeout=90,
        interval=0.05,
    ), first.log()[-3000:]
    first.kill()  # SIGKILL to the whole process group, mid-judge
    lost = list(in_flight.values_list("pk", flat=True))
    assert lost, "nothing was in flight at the kill"
    second = start_worker(concurrency=CONCURRENCY, **WORKER_ENV)
    assert wait_until(lambda: _finished(run), timeout=TIMEOUT, interval=0.5), (
        second.log()[-3000:]
    )
    assert run.status == Run.Status.DONE
    _assert_complete_once(run, 120)
    assert results.filter(status=Result.Status.OK).count() == 120
    # What the dead worker held was claimed again (after its lease ran out) and judged
    # to completion, with one stored call per judge step.
    for result in results.filter(pk__in=lost):
        assert result.attempts >= 2
        assert result.status == Result.Status.OK


def test_two_workers_share_the_judge_concurrency_limit(start_worker, judge_server):
    server = judge_server(latency_ms=40)
    project, user, dataset, scorers = _setup(
        server, items=30, kinds=["faithfulness"], max_concurrency=2
    )
    workers = [start_worker(concurrency=CONCURRENCY, **WORKER_ENV) for _ in range(2)]
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    assert wait_until(lambda: _finished(run), timeout=TIMEOUT, interval=0.5), (
        workers[0].log()[-2000:] + workers[1].log()[-2000:]
    )
    assert run.status == Run.Status.DONE
    stats = _stats(server)
    assert stats["completed"] >= 60
    assert stats["max_in_flight"] <= 2
    # Two dispatchers (two worker processes) judged the run: the limit held across
    # processes, not within one.
    received = sum(w.log().count("evals.run_dispatch[") for w in workers)
    assert received >= 2 * 2, [w.log()[-2000:] for w in workers]
