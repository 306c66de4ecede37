"""Many judge calls per worker slot: the judge connection's limiter, not the worker
pool, caps the calls in flight. Real worker (the shipped command: prefork,
four slots), real broker, the offline judge over HTTP and its own counters."""

from __future__ import annotations

import time

import pytest

from evalsite.evals.models import Result, Run
from evalsite.evals.runs import services as run_services
from tests.integration.conftest import wait_until
from tests.integration.test_runs import (
    WORKER_ENV,
    _assert_complete_once,
    _finished,
    _setup,
    _stats,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SHIPPED_CONCURRENCY = 4  # Procfile.dev's worker: --concurrency 4


def test_four_worker_slots_keep_the_judges_64_calls_in_flight(
    start_worker, judge_server
):
    server = judge_server(latency_ms=200)
    project, user, dataset, scorers = _setup(
        server, items=300, kinds=["faithfulness"], max_concurrency=64
    )
    worker = start_worker(concurrency=SHIPPED_CONCURRENCY, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    assert wait_until(lambda: _finished(run), timeout=300, interval=0.5), worker.log()[
        -3000:
    ]
    assert run.status == Run.Status.DONE
    _assert_complete_once(run, 300)
    stats = _stats(server)
    assert stats["completed"] >= 900
    # Four slots, one call each, would peak at 4; the limiter allows 64.
    assert 48 <= stats["max_in_flight"] <= 64, stats


def test_sigkill_of_a_worker_holding_a_batch_loses_and_duplicates_nothing(
    start_worker, judge_server
):
    server = judge_server(latency_ms=300)
    project, user, dataset, scorers = _setup(
        server, items=120, kinds=["faithfulness"], max_concurrency=32
    )
    first = start_worker(concurrency=SHIPPED_CONCURRENCY, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    results = Result.objects.filter(run=run)
    held = results.filter(status=Result.Status.PENDING, claimed_at__isnull=False)
    # A dispatcher holds many results under one claim token: kill it while it does.
    assert wait_until(
        lambda: results.exclude(status="pending").count() >= 10 and held.count() >= 8,
        timeout=90,
        interval=0.05,
    ), first.log()[-3000:]
    first.kill()
    lost = list(held.values_list("pk", flat=True))
    tokens = set(held.values_list("claimed_by", flat=True))
    assert len(lost) > len(tokens)  # several results per claim: a batch was held

    second = start_worker(concurrency=SHIPPED_CONCURRENCY, **WORKER_ENV)
    assert wait_until(lambda: _finished(run), timeout=300, interval=0.5), second.log()[
        -3000:
    ]
    assert run.status == Run.Status.DONE
    _assert_complete_once(run, 120)
    for result in results.filter(pk__in=lost):
        assert result.status == Result.Status.OK
        assert result.attempts >= 2


def test_cancel_stops_new_judge_calls_within_one_latency(start_worker, judge_server):
    latency = 0.5
    server = judge_server(latency_ms=latency * 1000)
    project, user, dataset, scorers = _setup(
        server, items=300, kinds=["faithfulness"], max_concurrency=32
    )
    worker = start_worker(concurrency=SHIPPED_CONCURRENCY, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    assert wait_until(
        lambda: _stats(server)["completed"] >= 64, timeout=90, interval=0.05
    ), worker.log()[-3000:]
    run_services.run_cancel(run=run, user=user)
    time.sleep(latency)
    after_one_latency = _stats(server)["chat_completions"]
    time.sleep(4 * latency)
    stats = _stats(server)
    # Requests that reach the judge after one latency from the cancel: none.
    assert stats["chat_completions"] == after_one_latency, stats
    assert stats["in_flight"] == 0
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert not Result.objects.filter(run=run, status=Result.Status.PENDING).exists()
