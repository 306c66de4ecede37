"""Real processes for integration tests: a Celery worker on the configured broker,
with an embedded beat sending the periodic jobs (the run watchdog) as `make run` does.

The worker runs with the app's own settings (not tests.settings, which is eager) and is
pointed at the test database that pytest-django created.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from scoring.offline_judge import start_server

ROOT = Path(__file__).resolve().parents[2]
# Real-worker tests wait for whole runs, outages and "retry failed" rounds (the fault
# tests up to about 12 minutes in the worst case): more than pyproject's 300 s timeout.
INTEGRATION_TIMEOUT_SECONDS = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("integration") and not item.get_closest_marker(
            "timeout"
        ):
            item.add_marker(pytest.mark.timeout(INTEGRATION_TIMEOUT_SECONDS))


def _test_database_url() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{connection.settings_dict['NAME']}"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return (
        f"postgres://{user}{password}@{host}:{port}/{connection.settings_dict['NAME']}"
    )


def worker_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        DATABASE_URL=_test_database_url(),
        PYTHONUNBUFFERED="1",
        CELERY_TASK_ALWAYS_EAGER="false",
    )
    env.update(extra)
    return env


class WorkerProcess:
    def __init__(self, log_path: Path, concurrency: int = 4, **env: str) -> None:
        self.log_path = log_path
        self.concurrency = concurrency
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "evalsite",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(self.concurrency),
                "-Q",
                "default,scoring",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                # The periodic jobs (the run watchdog among them) come from beat, run
                # here inside each worker; its schedule file is the worker's own.
                "--beat",
                "--schedule-filename",
                str(self.log_path.with_suffix(".beat-schedule")),
                "-n",
                f"test-{os.getpid()}-{time.monotonic_ns()}@%h",
            ],
            cwd=ROOT,
            env=worker_env(**self.env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the worker and its pool children (the whole process group)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        # SIGTERM to the main process only: it shuts its pool down itself; signalling the
        # whole group kills the children first and leaves the main process hanging.
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=20)
        self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real Celery worker processes; all are stopped at teardown."""
    workers: list[WorkerProcess] = []

    def _start(concurrency: int = 4, **env: str) -> WorkerProcess:
        worker = WorkerProcess(
            tmp_path / f"worker-{len(workers)}.log", concurrency, **env
        ).start()
        workers.append(worker)
        return worker

    yield _start
    for worker in workers:
        worker.stop()


@pytest.fixture
def judge_server() -> Iterator[Callable[..., Any]]:
    """Start offline judges in this process (stopped at teardown)."""
    servers: list[Any] = []

    def _start(**knobs: Any) -> Any:
        server = start_server(port=0, **knobs)
        servers.append(server)
        return server

    yield _start
    for server in servers:
        server.stop()


def wait_until(
    predicate: Callable[[], bool], timeout: float = 60, interval: float = 0.2
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture(autouse=True)
def _real_broker() -> Iterator[None]:
    """Send tasks through the real broker (unit tests run them eagerly); start with an empty queue."""
    from evalsite.celery import app

    app.conf.task_always_eager = False
    app.control.purge()
    yield
    app.control.purge()
    app.conf.task_always_eager = True
