"""Fault suite: the broker, the database connection and the judge fail mid-run.

Every run still completes with exactly one result per (item, scorer), no judge step
stored twice, and aggregates equal to a recount from the rows.

- Broker: a PRIVATE redis-server (never the shared one) on a free port, with an
  append-only file as production Redis would have; it is shut down mid-run and started
  again on the same port and data directory. The worker and the sender use it.
- Database: on Postgres, every worker connection is killed (pg_terminate_backend)
  several times mid-run. SQLite has no server connection to drop: skipped.
- Judge: the offline judge server stops mid-run and comes back on the same port after
  20 s; the judge's connection pauses and retries meanwhile (JUDGE_OUTAGE_SECONDS), so
  nothing fails. Down longer than that setting, results fail saying so, and "retry
  failed" brings them home.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count

from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeCall, Result, Run
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from scoring.offline_judge import start_server
from tests.evals.conftest import support_rows
from tests.factories import (
    DatasetFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)
from tests.integration.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Short leases and a fast watchdog so lost work is handed out again within seconds.
WORKER_ENV = {
    "EVALS_RESULT_LEASE_SECONDS": "4",
    "EVALS_MONITOR_INTERVAL_SECONDS": "2",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _setup(base_url: str, *, items: int, kinds: list[str]):
    project = ProjectFactory()
    user = UserFactory()
    MembershipFactory(project=project, user=user, role="owner")
    judge = judge_services.judge_create_offline(project)
    judge.base_url = base_url
    judge.max_concurrency = 8
    judge.save()
    dataset = DatasetFactory(project=project, name="support", rows=support_rows(items))
    scorers = [
        scorer_services.scorer_create(
            project=project, user=user, name=k, kind=k, judge=judge
        )
        for k in kinds
    ]
    return project, user, dataset, scorers


def _finished(run: Run) -> bool:
    run.refresh_from_db()
    return run.is_finished


def _restart_if_exited(worker: Any) -> None:
    """What the deployment's restart policy does (docker/compose.yml: restart:
    unless-stopped): start a worker again if it exited. Celery 5.7 sometimes exits with
    "Unrecoverable error: AttributeError(... 'hostname')" when its Redis broker goes
    away while it holds unacknowledged messages: kombu drops the connection's transport,
    then needs it to give those messages back."""
    if worker.proc is not None and worker.proc.poll() is not None:
        worker.start()


def _state(run: Run) -> str:
    run.refresh_from_db()
    counts = dict(
        Result.objects.filter(run=run).values_list("status").annotate(n=Count("pk"))
    )
    return f"run {run.status}: {counts}"


def _done_count(run: Run) -> int:
    return Result.objects.filter(run=run).exclude(status=Result.Status.PENDING).count()


def assert_complete_once_and_consistent(run: Run, expected: int) -> None:
    results = Result.objects.filter(run=run)
    assert results.count() == expected == run.total
    assert not results.filter(status=Result.Status.PENDING).exists()
    dupes = (
        results.values("item_id", "run_scorer_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not dupes.exists()
    twice = (
        JudgeCall.objects.filter(result__run=run, cache_hit=False, error="")
        .values("result_id", "step")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not twice.exists(), list(twice[:5])
    for agg in run_aggregates(run_id=run.pk):
        rows = list(results.filter(run_scorer_id=agg.run_scorer_id))
        ok = [r for r in rows if r.status == Result.Status.OK]
        assert agg.total == len(rows)
        assert agg.ok == len(ok)
        assert agg.errors == sum(r.status == Result.Status.ERROR for r in rows)
        if ok:
            judge_mean = sum(r.judge_score for r in ok) / len(ok)
            final_mean = sum(r.final_score for r in ok) / len(ok)
            assert agg.judge_mean == pytest.approx(judge_mean, abs=1e-6)
            assert agg.final_mean == pytest.approx(final_mean, abs=1e-6)
            assert agg.final_pass_rate == pytest.approx(
                sum(bool(r.final_passed) for r in ok) / len(ok), abs=1e-6
            )


def _retry_failed_until_ok(run: Run, user, rounds: int = 3) -> None:
    for _ in range(rounds):
        if not Result.objects.filter(run=run, status=Result.Status.ERROR).exists():
            return
        run_services.run_retry_failed(run=run, user=user)
        assert wait_until(lambda: _finished(run), timeout=120, interval=0.5)


# ------------------------------------------------------------------ broker


class PrivateRedis:
    def __init__(self, directory: Path) -> None:
        self.port = _free_port()
        self.dir = directory
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_until(self._ping, timeout=10, interval=0.1)

    def _ping(self) -> bool:
        result = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
        )
        return result.stdout.strip() == "PONG"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


@pytest.fixture
def private_redis(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    from evalsite.celery import app

    server = PrivateRedis(tmp_path)
    server.start()
    # This process sends through the private broker too (run start, retry failed).
    previous = app.conf.broker_url, app.conf.broker_transport_options
    _rebind(app, server.url, {"visibility_timeout": 3600})
    try:
        yield server
    finally:
        _rebind(app, *previous)
        server.stop()


def _rebind(app, url: str, options: dict) -> None:
    # Drop (not close) the old pools: other objects may still hold them.
    app._pool = None
    app.amqp._producer_pool = None
    app.conf.broker_url = url
    app.conf.broker_transport_options = options


def test_broker_restarted_mid_run(start_worker, private_redis):
    judge = start_server(port=0, latency_ms=15)
    try:
        project, user, dataset, scorers = _setup(
            judge.base_url, items=80, kinds=["faithfulness", "answer_relevancy"]
        )
        worker = start_worker(concurrency=4, REDIS_URL=private_redis.url, **WORKER_ENV)
        run = run_services.run_start(
            project=project, user=user, dataset=dataset, scorers=scorers
        )
        assert wait_until(lambda: _done_count(run) >= 20, timeout=90), worker.log()[
            -3000:
        ]

        private_redis.stop()
        time.sleep(3)
        private_redis.start()

        def finished() -> bool:
            _restart_if_exited(worker)
            return _finished(run)

        assert wait_until(finished, timeout=240, interval=0.5), worker.log()[-4000:]
        _retry_failed_until_ok(run, user)
        assert_complete_once_and_consistent(run, 160)
    finally:
        judge.stop()


# ------------------------------------------------------------------ database


def test_database_connections_dropped_mid_run(start_worker):
    if connection.vendor != "postgresql":
        pytest.skip(
            "SQLite has no server connection to drop; run with DATABASE_URL=postgres://"
        )
    judge = start_server(port=0, latency_ms=15)
    try:
        project, user, dataset, scorers = _setup(
            judge.base_url, items=80, kinds=["faithfulness", "answer_relevancy"]
        )
        worker = start_worker(concurrency=4, **WORKER_ENV)
        run = run_services.run_start(
            project=project, user=user, dataset=dataset, scorers=scorers
        )
        assert wait_until(lambda: _done_count(run) >= 15, timeout=90), worker.log()[
            -3000:
        ]
        killed = 0
        for _ in range(3):
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                killed += cursor.fetchone()[0]
            time.sleep(1.5)
        assert killed > 0  # the worker really had connections to lose
        assert wait_until(lambda: _finished(run), timeout=240, interval=0.5), (
            worker.log()[-4000:]
        )
        _retry_failed_until_ok(run, user)
        assert_complete_once_and_consistent(run, 160)
    finally:
        judge.stop()


def _terminate_worker_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_database_blip_keeps_the_judge_limit_and_pays_no_call_twice(start_worker):
    """Database connections dropped while calls are in flight: the dispatchers that
    fail on them hold their limiter slots until those calls end (the judge never has
    more than max_concurrency calls at once), and the replies they got are not asked
    for again by the retry (159 calls against a limit of 128, and
    480+ calls paid twice per episode)."""
    if connection.vendor != "postgresql":
        pytest.skip(
            "SQLite has no server connection to drop; run with DATABASE_URL=postgres://"
        )
    # Slow replies, so that every blip finds calls in flight.
    judge = start_server(port=0, latency_ms=400)
    try:
        project, user, dataset, scorers = _setup(
            judge.base_url, items=60, kinds=["faithfulness", "answer_relevancy"]
        )
        worker = start_worker(concurrency=4, **WORKER_ENV)
        run = run_services.run_start(
            project=project, user=user, dataset=dataset, scorers=scorers
        )
        assert wait_until(lambda: _done_count(run) >= 10, timeout=90), worker.log()[
            -3000:
        ]
        killed = 0
        for _ in range(4):
            wait_until(lambda: judge.state.in_flight > 0, timeout=10, interval=0.02)
            killed += _terminate_worker_connections()
            time.sleep(1.5)
        assert killed > 0  # the worker really had connections to lose
        assert wait_until(lambda: _finished(run), timeout=240, interval=0.5), (
            worker.log()[-4000:]
        )
        stats = judge.state.snapshot()
        assert stats["max_in_flight"] <= 8, stats
        assert stats["answered_twice"] == 0, stats
        _retry_failed_until_ok(run, user)
        assert_complete_once_and_consistent(run, 120)
    finally:
        judge.stop()


# ------------------------------------------------------------------ judge


JUDGE_OUTAGE_SECONDS = 20


def test_judge_down_for_a_while_and_back(start_worker):
    """A judge that cannot be reached for 20 s pauses its connection, as a 429 does;
    the run waits it out and ends with 0 errors (824 of 3,000 results
    "gave up after 5 attempts: connection error")."""
    judge = start_server(port=0, latency_ms=15)
    port = int(judge.base_url.rsplit(":", 1)[1].split("/")[0])
    project, user, dataset, scorers = _setup(
        judge.base_url, items=80, kinds=["faithfulness", "answer_relevancy"]
    )
    worker = start_worker(concurrency=4, **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    try:
        assert wait_until(lambda: _done_count(run) >= 20, timeout=90), worker.log()[
            -3000:
        ]
        judge.stop()
        time.sleep(JUDGE_OUTAGE_SECONDS)
        judge = start_server(port=port, latency_ms=15)
        assert wait_until(lambda: _finished(run), timeout=240, interval=0.5), (
            worker.log()[-4000:]
        )
        errors = list(
            Result.objects.filter(run=run, status=Result.Status.ERROR).values_list(
                "error", flat=True
            )[:3]
        )
        assert errors == [], errors
        assert_complete_once_and_consistent(run, 160)
    finally:
        judge.stop()


def test_judge_down_longer_than_the_outage_setting_fails_results_saying_so(
    start_worker,
):
    # Slow enough that the run is far from done when the judge goes away.
    judge = start_server(port=0, latency_ms=300)
    port = int(judge.base_url.rsplit(":", 1)[1].split("/")[0])
    project, user, dataset, scorers = _setup(
        judge.base_url, items=60, kinds=["faithfulness", "answer_relevancy"]
    )
    worker = start_worker(concurrency=4, JUDGE_OUTAGE_SECONDS="2", **WORKER_ENV)
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers
    )
    try:
        assert wait_until(lambda: _done_count(run) >= 5, timeout=90), worker.log()[
            -3000:
        ]
        judge.stop()
        failed = Result.objects.filter(run=run, status=Result.Status.ERROR)
        assert wait_until(failed.exists, timeout=60, interval=0.5), worker.log()[-4000:]
        judge = start_server(port=port, latency_ms=300)
        assert wait_until(lambda: _finished(run), timeout=240, interval=0.5), (
            worker.log()[-4000:]
        )
        for error in failed.values_list("error", flat=True):
            assert "judge unreachable for" in error, error
            assert "longer than the 2 s allowed" in error, error
        _retry_failed_until_ok(run, user)
        assert not failed.exists()
        assert_complete_once_and_consistent(run, 120)
    finally:
        judge.stop()
