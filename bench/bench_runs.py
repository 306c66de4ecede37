"""Run throughput at realistic judge latencies (section "runs"), with the worker
command the README ships.

Each row is one run of N faithfulness results (3 judge calls each, every prompt
distinct so nothing comes from the cache) started through the service the API calls,
through the configured broker to the worker command of Procfile.dev (prefork, its
default concurrency: the same command `make run` starts), against the offline judge in
its own process at the row's latency, with the judge connection's max_concurrency set
to the row's. The bound is max_concurrency / latency calls per second; the figure is
end to end, from the run's start to its last result, as a share of that bound.
Beside it: the worker processes' CPU per 1,000 calls (user + system, all the worker's
processes), and the judge's peak calls in flight (never above max_concurrency).

Rows: 100 ms / 16 / 1,500 results (target 90 %), 1 s / 128 / 1,500
(85 %), 2 s / 512 / 3,000 (80 %). Run one row alone with BENCH_RUNS_LATENCY_MS,
BENCH_RUNS_CONCURRENCY and BENCH_RUNS_RESULTS (all three, or any: the rest default to
the first row's).

Needs Django set up on a scratch database (the bench runner does it). Creates a scratch
project per row and deletes it afterwards. Run alone: `python -m bench bench_runs`.
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._common import settle_database, start_offline_judge, stop_process

ROOT = Path(__file__).resolve().parent.parent
# (latency ms, max_concurrency, results, target share of the bound)
ROWS: list[tuple[int, int, int, float]] = [
    (100, 16, 1500, 0.90),
    (1000, 128, 1500, 0.85),
    (2000, 512, 3000, 0.80),
]
_ENV_ROW = any(
    name in os.environ
    for name in (
        "BENCH_RUNS_LATENCY_MS",
        "BENCH_RUNS_CONCURRENCY",
        "BENCH_RUNS_RESULTS",
    )
)
if _ENV_ROW:
    _latency = int(os.environ.get("BENCH_RUNS_LATENCY_MS", 100))
    _concurrency = int(os.environ.get("BENCH_RUNS_CONCURRENCY", 16))
    _results = int(os.environ.get("BENCH_RUNS_RESULTS", 1500))
    _targets = {(r[0], r[1]): r[3] for r in ROWS}
    ROWS = [
        (_latency, _concurrency, _results, _targets.get((_latency, _concurrency), 0.8))
    ]


def shipped_worker_command() -> list[str]:
    """The `worker:` line of Procfile.dev, as `make run` starts it (its default
    concurrency), with this interpreter's celery."""
    for line in (ROOT / "Procfile.dev").read_text().splitlines():
        if line.startswith("worker:"):
            command = line.split(":", 1)[1].strip()
            break
    else:  # pragma: no cover - the Procfile always has one
        raise RuntimeError("Procfile.dev has no worker line")
    command = command.replace(
        "${WORKER_CONCURRENCY:-4}", os.environ.get("WORKER_CONCURRENCY", "4")
    )
    argv = shlex.split(command)
    if "--" in argv:  # `manage.py supervise --name worker -- <the worker command>`
        argv = argv[argv.index("--") + 1 :]
    assert argv[0].endswith("celery"), argv
    return [sys.executable, "-m", "celery", *argv[1:]]


def _start_worker(
    log_dir: Path, judge_url: str, name: str = "bench-runs"
) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        CELERY_TASK_ALWAYS_EAGER="false",
        # As deployed (docker/compose.yml): with DEBUG on, Django also records every
        # query a worker sends, which a production worker does not pay for.
        DEBUG="false",
        SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        ALLOWED_HOSTS="localhost",
        # As docker/compose.yml does: the offline judge's address is the one private
        # address judges may reach without DEBUG.
        OFFLINE_JUDGE_URL=judge_url,
    )
    log = open(log_dir / "worker.log", "wb")  # noqa: SIM115 - closed by the process
    return subprocess.Popen(
        [*shipped_worker_command(), "-n", f"{name}-{os.getpid()}@%h"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _group_cpu_seconds(pgid: int) -> float:
    """User + system CPU of every live process in the group (the worker and its pool)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:  # fields[2] is the pgrp (field 5 of stat)
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


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
    rows: list[dict[str, Any]] = []
    for latency_ms, concurrency, results, target in ROWS:
        rows += _run_row(latency_ms, concurrency, results, target)
    return rows


def _run_row(
    latency_ms: int, concurrency: int, n_results: int, target: float
) -> list[dict[str, Any]]:
    from celery import current_app
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from evalsite.accounts.models import Membership, Project
    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals.judges import services as judge_services
    from evalsite.evals.models import JudgeCacheEntry, Result, Run, ScorerConfig
    from evalsite.evals.runs import services as run_services
    from evalsite.evals.scorers import services as scorer_services

    current_app.conf.task_always_eager = False
    bench_started = timezone.now()
    label = f"{latency_ms / 1000:g} s judge, max_concurrency {concurrency}"
    bound = concurrency / (latency_ms / 1000)
    judge_process, judge_url = start_offline_judge(latency_ms)
    stats_url = judge_url.removesuffix("/v1") + "/_stats"
    stats_client = httpx.Client(timeout=5)
    project = Project.objects.create(name=f"bench-runs-{int(time.time())}")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    worker: subprocess.Popen[bytes] | None = None
    try:
        user, _ = get_user_model().objects.get_or_create(username="bench-runs")
        Membership.objects.create(project=project, user=user, role="owner")
        judge = judge_services.judge_create_offline(project)
        judge.base_url = judge_url
        judge.max_concurrency = concurrency
        judge.requests_per_minute = 0
        judge.save()
        dataset = Dataset.objects.create(
            project=project, name="bench", file_format="jsonl", item_count=n_results
        )
        tag = f"{project.pk}-{latency_ms}"
        Item.objects.bulk_create(
            Item(
                dataset=dataset,
                index=i,
                input=f"How long do refunds for order {tag}-{i} take?",
                output=f"Refunds for order {tag}-{i} are processed within 5 days.",
                context=[f"Refunds for order {tag}-{i} are processed within 5 days."],
                reference="",
            )
            for i in range(n_results)
        )
        scorer = scorer_services.scorer_create(
            project=project, user=user, name="F", kind="faithfulness", judge=judge
        )
        settle_database()
        worker = _start_worker(log_dir, judge_url)
        time.sleep(6)  # let the worker boot before the clock starts
        cpu_before = _group_cpu_seconds(worker.pid)
        started = timezone.now()
        run_obj = run_services.run_start(
            project=project, user=user, dataset=dataset, scorers=[scorer]
        )
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            if Run.objects.filter(
                pk=run_obj.pk, status__in=list(Run.FINISHED)
            ).exists():
                break
            time.sleep(0.25)
        cpu = _group_cpu_seconds(worker.pid) - cpu_before
        stats = stats_client.get(stats_url).json()
        results = Result.objects.filter(run=run_obj)
        ok_results = results.filter(status="ok").count()
        last = max(r.updated_at for r in results.only("updated_at"))
        elapsed = (last - started).total_seconds()
        calls = stats["completed"]
        share = calls / elapsed / bound
        note = (
            f"{n_results} faithfulness results, {calls} calls in {elapsed:.1f} s; "
            f"worker: {' '.join(shipped_worker_command()[3:])}"
        )
        return [
            _row(f"{label}: bound", round(bound, 1), "calls/s"),
            _row(
                f"{label}: end to end / bound",
                round(100 * share, 1),
                "%",
                f">= {100 * target:.0f}",
                share >= target,
                note,
            ),
            _row(
                f"{label}: worker CPU per 1,000 calls",
                round(1000 * cpu / max(1, calls), 2),
                "s",
                note="user + system, every process of the worker",
            ),
            _row(
                f"{label}: judge peak calls in flight",
                stats["max_in_flight"],
                "requests",
                f"<= {concurrency}",
                stats["max_in_flight"] <= concurrency,
            ),
            _row(
                f"{label}: results ok",
                ok_results,
                "results",
                n_results,
                ok_results == n_results,
            ),
        ]
    finally:
        _stop(worker)
        stats_client.close()
        stop_process(judge_process)
        # Drop the replies this bench stored, or every run would leave thousands
        # behind in the scratch database.
        JudgeCacheEntry.objects.filter(created_at__gte=bench_started).delete()
        Result.objects.filter(run__project=project).delete()
        Run.objects.filter(project=project).delete()
        ScorerConfig.objects.filter(project=project).delete()
        project.delete()


if (
    __name__ == "__main__"
):  # pragma: no cover - `python -m bench bench_runs` is the entry
    raise SystemExit("run it through the bench runner: python -m bench bench_runs")
