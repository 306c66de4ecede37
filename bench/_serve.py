"""The processes `make serve` (or `make run`) starts, driven from outside as a user
would: started from the Procfile, reached over HTTP, stopped as a group.

Shared by the end-to-end run figures, the fifty-reviewer load test and the embedded
default (bench_serve).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Stack:
    """`honcho -f <procfile> start <processes>` with this checkout's venv, in a
    process group of its own, logging to log_dir/stack.log."""

    procfile: str
    processes: list[str]
    env: dict[str, str]
    log_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str, timeout: float = 600) -> str:
        """`manage.py <args>` in the stack's environment (its database, its var dir)."""
        done = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "python"), "manage.py", *args],
            cwd=ROOT,
            env=self.full_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed: {done.stderr[-2000:]}")
        return done.stdout

    def full_env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        }
        env.update(self.env)
        env["EVALSITE_PORT"] = str(self.port)
        return env

    def start(self, ready_timeout: float = 180) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.env.get("DEBUG") == "false":
            # As `make serve` does before it starts them: without DEBUG the pages
            # name their files through the collected static manifest.
            self.manage("collectstatic", "--noinput", "-v", "0")
        log = open(self.log_dir / "stack.log", "wb")  # noqa: SIM115 - the process owns it
        self.process = subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "honcho"),
                "-f",
                self.procfile,
                "start",
                *self.processes,
            ],
            cwd=ROOT,
            env=self.full_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + ready_timeout
        with httpx.Client(timeout=5) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the stack ended: see {self.log_dir}/stack.log")
                try:
                    if (
                        client.get(f"{self.url}/healthz").status_code == 200
                        and self._worker_ready()
                    ):
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
        raise RuntimeError(f"the stack did not answer: see {self.log_dir}/stack.log")

    def _worker_ready(self) -> bool:
        """The Celery worker, when the stack runs one, has said it is ready: the web
        server may answer seconds before it does (2.2-2.5 s on one start), and a run
        POSTed meanwhile would count the worker's start-up as the run's time."""
        if "worker" not in self.processes:
            return True
        log = (self.log_dir / "stack.log").read_text(errors="replace")
        return re.search(r"celery@\S+ ready\.", log) is not None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def serve_env(database_url: str, redis_url: str, judge_url: str) -> dict[str, str]:
    """What `make serve` exports, for plain HTTP on loopback (SECURE_COOKIES=false: the
    load test's client is not a browser)."""
    env = {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_COOKIES": "false",
        "OFFLINE_JUDGE_URL": judge_url,
        "DATABASE_URL": database_url,
    }
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


class Api:
    """The REST API with a token, as a script or CI would call it."""

    def __init__(self, base_url: str, token: str) -> None:
        self.client = httpx.Client(
            base_url=f"{base_url}/api",
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
        )

    def post(self, path: str, **kwargs: Any) -> Any:
        response = self.client.post(path, **kwargs)
        if response.status_code >= 300:
            raise RuntimeError(
                f"POST {path}: {response.status_code} {response.text[:500]}"
            )
        return response.json()

    def get(self, path: str, **kwargs: Any) -> Any:
        response = self.client.get(path, **kwargs)
        if response.status_code >= 300:
            raise RuntimeError(
                f"GET {path}: {response.status_code} {response.text[:500]}"
            )
        return response.json()

    def close(self) -> None:
        self.client.close()


def create_user_and_token(stack: Stack, username: str, password: str) -> str:
    """A superuser in the stack's database and an API token for them (the raw token)."""
    stack.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; U = get_user_model(); "
        f"U.objects.filter(username={username!r}).exists() or "
        f"U.objects.create_superuser({username!r}, '', {password!r})",
    )
    return stack.manage("create_api_token", username).split()[-1]


@dataclass
class RunTimeline:
    """A run followed from the POST that starts it to status done."""

    elapsed: float
    post_seconds: float
    first_call_seconds: float | None
    last_call_seconds: float | None
    calls: int
    max_in_flight: int
    # The judge's own seconds on the run's calls (from each request's arrival to its
    # reply): over the elapsed time, the mean calls in flight; per call, its latency.
    judge_busy_seconds: float
    status: str
    results_ok: int
    total: int


def follow_run(
    api: Api,
    project_id: int,
    body: dict[str, Any],
    judge_stats_url: str,
    timeout: float = 1200,
    on_tick: Any = None,
    poll_seconds: float = 1.0,
) -> tuple[int, RunTimeline]:
    """POST the run, then follow it as a CI job would: its status from the API every
    `poll_seconds` (and `on_tick` as often), the judge's counters every 0.1 s (when
    the first judge call arrived, when the last was answered; the judge is another
    process and its counters cost it nothing). Returns (run id, timeline).

    The run's end is its `finished_at` (the moment its status became done), not the
    poll that saw it: the figure is then exact without polling the API often. At
    0.1 s, the polls alone took a sixth of a core from the run they timed (each
    `GET /api/runs/{id}` recounts a running run's aggregates, 16-19 ms)."""
    stats = httpx.Client(timeout=5)
    before = stats.get(judge_stats_url).json()
    posted_at = time.time()
    started = time.monotonic()
    run = api.post(f"/projects/{project_id}/runs", json=body)
    post_seconds = time.monotonic() - started
    first_call = last_call = None
    completed = before["completed"]
    deadline = started + timeout
    detail: dict[str, Any] = {}
    next_api = started
    while time.monotonic() < deadline:
        now = time.monotonic() - started
        judge = stats.get(judge_stats_url).json()
        if first_call is None and judge["requests"] > before["requests"]:
            first_call = now
        if judge["completed"] > completed:
            completed = judge["completed"]
            last_call = now
        if time.monotonic() >= next_api:
            next_api = time.monotonic() + poll_seconds
            detail = api.get(f"/runs/{run['id']}")
            if detail["status"] in {"done", "done_with_errors", "cancelled", "failed"}:
                break
            if on_tick is not None:
                on_tick(run["id"])
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    if detail.get("finished_at"):
        finished = datetime.fromisoformat(detail["finished_at"]).timestamp()
        elapsed = min(elapsed, finished - posted_at)
    judge = stats.get(judge_stats_url).json()
    stats.close()
    progress = detail.get("progress", {})
    return run["id"], RunTimeline(
        elapsed=elapsed,
        post_seconds=post_seconds,
        first_call_seconds=first_call,
        last_call_seconds=None if last_call is None else min(last_call, elapsed),
        calls=judge["completed"] - before["completed"],
        max_in_flight=judge["max_in_flight"],
        judge_busy_seconds=judge["busy_seconds"] - before["busy_seconds"],
        status=detail.get("status", "?"),
        results_ok=int(progress.get("ok", 0)),
        total=int(detail.get("total", 0)),
    )


def faithfulness_jsonl(n_items: int, tag: str) -> bytes:
    """n distinct faithfulness items (every prompt distinct: nothing from the cache)."""
    import json

    lines = [
        json.dumps(
            {
                "input": f"How long do refunds for order {tag}-{i} take?",
                "output": f"Refunds for order {tag}-{i} are processed within 5 days.",
                "context": [
                    f"Refunds for order {tag}-{i} are processed within 5 days.",
                    "Shipping is free above 50 euros.",
                ],
            }
        )
        for i in range(n_items)
    ]
    return ("\n".join(lines) + "\n").encode()
