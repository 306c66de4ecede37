"""Run throughput on a real worker pool (section "runs").

A run of N faithfulness results (3 judge calls each, every prompt distinct so nothing
comes from the cache) goes through the configured broker to real Celery worker
processes, against the offline judge (in its own process) at 100 ms latency with the
judge connection's max concurrency 16. The ideal bound is 16 / 0.1 s = 160 calls/s;
the target is 85 % of it. Measured from the judge's own counters: calls completed per second in the steady
part of the run (between 10 % and 90 % of the calls), plus the end-to-end figure
(start of the run to its last result, including fan-out and ramp-up).

Workers: 2 processes x 12 threads (one GIL per core on this 2-core machine, and more
task slots than judge slots so the limiter, not the pool, is what caps concurrency).
With the filesystem broker (no REDIS_URL) the workers poll their queue every 20 ms
instead of kombu's default 1 s, which would otherwise cap any pool at `concurrency`
tasks per second.

Needs Django set up on a scratch database (the bench runner does it). Creates a scratch
project and deletes it afterwards. Run alone: `python -m bench bench_runs`.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._common import settle_database, start_offline_judge, stop_process

ROOT = Path(__file__).resolve().parent.parent
N_RESULTS = int(os.environ.get("BENCH_RUNS_RESULTS", 1500))
LATENCY_MS = 100
MAX_CONCURRENCY = 16
IDEAL = MAX_CONCURRENCY / (LATENCY_MS / 1000)
TARGET_FRACTION = 0.85
WORKERS = int(os.environ.get("BENCH_RUNS_WORKERS", 2))
THREADS = int(os.environ.get("BENCH_RUNS_THREADS", 12))
POOL = os.environ.get("BENCH_RUNS_POOL", "threads")

_WORKER_CODE = """
import sys
from evalsite.celery import app
if app.conf.broker_url.startswith("filesystem"):
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options, "polling_interval": 0.02
    }
app.worker_main(sys.argv[1:])
"""


def _start_workers(log_dir: Path, judge_url: str) -> list[subprocess.Popen[bytes]]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        CELERY_TASK_ALWAYS_EAGER="false",
        LOG_LEVEL="WARNING",
        # As deployed (docker/compose.yml): with DEBUG on, Django also records every
        # query a worker sends, which a production worker does not pay for.
        DEBUG="false",
        SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        ALLOWED_HOSTS="localhost",
        # As docker/compose.yml does: the offline judge's address is the one private
        # address judges may reach without DEBUG.
        OFFLINE_JUDGE_URL=judge_url,
    )
    procs = []
    for i in range(WORKERS):
        log = open(log_dir / f"worker-{i}.log", "wb")  # noqa: SIM115 - closed by the process
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WORKER_CODE,
                    "worker",
                    "--pool",
                    POOL,
                    "--concurrency",
                    str(THREADS),
                    "-Q",
                    "default,scoring",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "--loglevel",
                    "WARNING",
                    "-n",
                    f"bench-runs-{i}-{os.getpid()}@%h",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    import signal

    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _row(
    name: str, value: Any, unit: str, target: Any = None, ok: Any = None, note: str = ""
) -> dict[str, Any]:
    return {
        "section": "runs",
        "name": name,
        "value": value,
        "unit": unit,
        "target": target,
        "ok": ok,
        "note": note,
    }


def run() -> list[dict[str, Any]]:
    from celery import current_app
    from django.utils import timezone

    from evalsite.accounts.models import Membership, Project
    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals import services
    from evalsite.evals.models import Result, Run

    current_app.conf.task_always_eager = False
    bench_started = timezone.now()
    judge_process, judge_url = start_offline_judge(LATENCY_MS)
    stats_url = judge_url.removesuffix("/v1") + "/_stats"
    # One client for the polling: httpx.get() builds a client, and with it an SSL
    # context (tens of ms of CPU), on every call, taken from the workers being measured.
    stats_client = httpx.Client(timeout=5)
    project = Project.objects.create(name=f"bench-runs-{int(time.time())}")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        from django.contrib.auth import get_user_model

        user, _ = get_user_model().objects.get_or_create(username="bench-runs")
        Membership.objects.create(project=project, user=user, role="owner")
        judge = services.judge_create_offline(project)
        judge.base_url = judge_url
        judge.max_concurrency = MAX_CONCURRENCY
        judge.requests_per_minute = 0
        judge.save()
        dataset = Dataset.objects.create(
            project=project, name="bench", file_format="jsonl", item_count=N_RESULTS
        )
        Item.objects.bulk_create(
            Item(
                dataset=dataset,
                index=i,
                input=f"How long do refunds for order {i} take?",
                output=f"Refunds for order {i} are processed within 5 business days.",
                context=[
                    f"Refunds for order {i} are processed within 5 business days."
                ],
                reference="",
            )
            for i in range(N_RESULTS)
        )
        scorer = services.scorer_create(
            project=project, user=user, name="F", kind="faithfulness", judge=judge
        )
        settle_database()
        procs = _start_workers(log_dir, judge_url)
        time.sleep(6)  # let the workers boot before the clock starts
        started = time.monotonic()
        run_obj = services.run_start(
            project=project, user=user, dataset=dataset, scorers=[scorer]
        )
        expected = 3 * N_RESULTS
        samples: list[tuple[float, int]] = []
        cpu_before = _cpu_ticks()
        deadline = started + 600
        while time.monotonic() < deadline:
            completed = stats_client.get(stats_url).json()["completed"]
            samples.append((time.monotonic(), completed))
            if Run.objects.filter(
                pk=run_obj.pk, status__in=list(Run.FINISHED)
            ).exists():
                break
            time.sleep(0.25)
        elapsed = time.monotonic() - started
        cpu_after = _cpu_ticks()
        busy = (cpu_after[0] - cpu_before[0]) / max(1, cpu_after[1] - cpu_before[1])
        stats = stats_client.get(stats_url).json()
        ok_results = Result.objects.filter(run=run_obj, status="ok").count()
        low = next(s for s in samples if s[1] >= 0.1 * expected)
        high = next((s for s in samples if s[1] >= 0.9 * expected), samples[-1])
        steady = (high[1] - low[1]) / (high[0] - low[0]) if high[0] > low[0] else 0.0
        end_to_end = stats["completed"] / elapsed
        target = TARGET_FRACTION * IDEAL
        note = (
            f"{N_RESULTS} faithfulness results, {stats['completed']} calls, "
            f"{WORKERS} workers x {THREADS} {POOL}"
        )
        return [
            _row("ideal bound (16 / 0.1 s)", IDEAL, "calls/s"),
            _row(
                "achieved, steady state",
                round(steady, 1),
                "calls/s",
                f">= {target:.0f}",
                steady >= target,
                note,
            ),
            _row(
                "achieved / ideal",
                round(100 * steady / IDEAL, 1),
                "%",
                f">= {100 * TARGET_FRACTION:.0f}",
                steady >= target,
            ),
            _row(
                "achieved, end to end",
                round(end_to_end, 1),
                "calls/s",
                note="incl. fan-out and ramp",
            ),
            _row(
                "judge max in flight",
                stats["max_in_flight"],
                "requests",
                f"<= {MAX_CONCURRENCY}",
                stats["max_in_flight"] <= MAX_CONCURRENCY,
            ),
            _row(
                "machine CPU busy during the run",
                round(100 * busy, 1),
                "%",
                note=f"{os.cpu_count()} CPUs; judge, workers and database share them",
            ),
            _row(
                "results ok",
                ok_results,
                "results",
                N_RESULTS,
                ok_results == N_RESULTS,
            ),
        ]
    finally:
        _stop(procs)
        stats_client.close()
        stop_process(judge_process)
        from evalsite.evals.models import JudgeCacheEntry, ScorerConfig

        # The cache is not per project: drop the replies this bench stored, or every
        # run would leave thousands behind in the scratch database.
        JudgeCacheEntry.objects.filter(created_at__gte=bench_started).delete()

        Result.objects.filter(run__project=project).delete()
        Run.objects.filter(project=project).delete()
        ScorerConfig.objects.filter(project=project).delete()
        project.delete()


if (
    __name__ == "__main__"
):  # pragma: no cover - `python -m bench bench_runs` is the entry
    raise SystemExit("run it through the bench runner: python -m bench bench_runs")
