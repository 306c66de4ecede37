"""Speed as users meet it, on the processes a server runs (section "serve").

1. End to end from the API: `make serve`'s processes (gunicorn, the Celery worker,
   beat; Procfile.serve) on this bench's Postgres and Redis, the offline judge in its
   own process at the row's latency, the judge connection's max_concurrency at the
   row's and no requests-per-minute cap, so concurrency is the only limit. The clock
   runs from the `POST /api/projects/{id}/runs` that starts a run of N faithfulness
   items (3 judge calls each, every prompt distinct) to the moment
   `GET /api/runs/{id}` says `done` (its `finished_at`; the API is polled every
   second, as a CI job would). The bound is the judge's: calls × latency /
   max_concurrency seconds; the figure is that bound as a share of the time taken.
   Beside it, where the time went: the POST itself, until the first judge call
   arrived (fan-out and dispatch start), and from the last judge reply to `done` (the
   tail: storing, aggregates, the finish).
2. Fifty reviewers beside a running run: the same processes, 50 locust users
   (bench/locust_reviewers.py) who log in and work an overlap-3 queue, overrides, the
   explorer, the item page and the run page with think times, while a run judges at
   512 in flight against the judge at 2 s. Page p95 (target ≤ 300 ms) and errors
   (target 0) from locust; the run's share of its bound (target ≥ 75 % and no more
   than 10 points under the quiet figure); afterwards every answer locust saw
   accepted is in the database, and every run aggregate the API shows equals a
   recount from the result rows.
3. The embedded default: nothing configured (SQLite and the filesystem transport in a
   fresh var dir, `make run`'s Procfile.dev processes), a 15,000-result run (5,000
   items × faithfulness, hallucination and answer relevancy) against the offline
   judge at 15 ms, from the POST to done: target ≤ 120 s. Meanwhile a person watches
   the run page as a browser tab does (its progress region polled every second, the
   whole page reloaded every 5 s) and an API client polls the run's status every
   second; the page's and the poll's latency while the run judges (p95).

Run alone: `python -m bench bench_serve` (all three), or one part with
BENCH_SERVE_PARTS=e2e,load,embedded. Needs DATABASE_URL on Postgres and REDIS_URL for
parts 1 and 2 (they are skipped, saying so, otherwise).
"""

from __future__ import annotations

import csv
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._common import percentile, start_offline_judge, stop_process
from bench._serve import (
    ROOT,
    Api,
    Stack,
    create_user_and_token,
    faithfulness_jsonl,
    follow_run,
    serve_env,
)

SECTION = "serve"
# (latency ms, max_concurrency, faithfulness items, target share of the bound)
E2E_ROWS = [(1000, 128, 1000, 0.90), (2000, 512, 3000, 0.85)]
LOAD_USERS = 50
LOAD_RUN = (2000, 512, 3000)
LOAD_QUEUE_SIZE = 2000
REVIEWED_ITEMS = 5000
# A quick look at the machinery, not a figure: BENCH_SERVE_ITEMS=200 shrinks every run.
if "BENCH_SERVE_ITEMS" in os.environ:
    _n = int(os.environ["BENCH_SERVE_ITEMS"])
    E2E_ROWS = [(lat, conc, _n, target) for lat, conc, _, target in E2E_ROWS]
    LOAD_RUN = (LOAD_RUN[0], LOAD_RUN[1], _n)
    REVIEWED_ITEMS = _n
    LOAD_QUEUE_SIZE = 2 * _n // 5
PAGE_TARGET_MS = 300.0
EMBEDDED_ITEMS = int(os.environ.get("BENCH_SERVE_EMBEDDED_ITEMS", 5000))
EMBEDDED_KINDS = ("faithfulness", "hallucination", "answer_relevancy")
EMBEDDED_TARGET_S = 120.0
EMBEDDED_RELOAD_SECONDS = 5.0
EMBEDDED_CONCURRENCY = 16
PASSWORD = "bench-serve-password"


def _row(
    name: str, value: Any, unit: str, target: Any = None, ok: Any = None, note: str = ""
) -> dict[str, Any]:
    return {
        "section": SECTION,
        "name": name,
        "value": value,
        "unit": unit,
        "target": target,
        "ok": ok,
        "note": note,
    }


def _parts() -> set[str]:
    raw = os.environ.get("BENCH_SERVE_PARTS", "e2e,load,embedded")
    return {p.strip() for p in raw.split(",") if p.strip()}


def _cancel_leftover_runs() -> None:
    """Runs an interrupted bench left unfinished in the scratch database: the next
    stack's watchdog would pick them up and judge them beside the timed run."""
    from evalsite.evals.models import Result, Run

    leftover = Run.objects.exclude(status__in=list(Run.FINISHED))
    Result.objects.filter(run__in=leftover, status="pending").update(status="cancelled")
    leftover.update(status=Run.Status.CANCELLED)


def run() -> list[dict[str, Any]]:
    parts = _parts()
    _cancel_leftover_runs()
    rows: list[dict[str, Any]] = []
    database_url = os.environ["DATABASE_URL"]
    redis_url = os.environ.get("REDIS_URL", "")
    on_server = database_url.startswith("postgres") and bool(redis_url)
    quiet: dict[tuple[int, int], float] = {}
    if parts & {"e2e", "load"} and not on_server:
        rows.append(
            _row(
                "end to end and load test",
                None,
                "",
                note="skipped: needs DATABASE_URL on Postgres and REDIS_URL",
            )
        )
    else:
        if "e2e" in parts:
            for latency, concurrency, items, target in E2E_ROWS:
                share, e2e_rows = _e2e_row(
                    database_url, redis_url, latency, concurrency, items, target
                )
                quiet[(latency, concurrency)] = share
                rows += e2e_rows
        if "load" in parts:
            rows += _load_test(database_url, redis_url, quiet)
    if "embedded" in parts:
        rows += _embedded()
    return rows


# 1. End to end ---------------------------------------------------------------------


def _project_with_judge(
    api: Api, name: str, judge_url: str, concurrency: int
) -> tuple[int, int]:
    project = api.post("/projects", json={"name": name})
    judge = api.post(
        f"/projects/{project['id']}/judges",
        json={
            "name": "offline",
            "base_url": judge_url,
            "model": "offline-judge",
            "max_concurrency": concurrency,
            "rpm": 0,
        },
    )
    return project["id"], judge["id"]


def _upload(api: Api, project_id: int, name: str, n_items: int) -> int:
    data = faithfulness_jsonl(n_items, f"{name}-{time.time_ns()}")
    dataset = api.post(
        f"/projects/{project_id}/datasets",
        files={"file": (f"{name}.jsonl", data, "application/x-ndjson")},
        data={"name": name},
    )
    return int(dataset["id"])


def _scorers(
    api: Api, project_id: int, judge_id: int, kinds: tuple[str, ...]
) -> list[int]:
    return [
        api.post(
            f"/projects/{project_id}/scorers",
            json={"name": kind, "kind": kind, "judge_id": judge_id},
        )["id"]
        for kind in kinds
    ]


def _timeline_rows(
    label: str, tl: Any, latency: int, concurrency: int, target: float
) -> tuple[float, list[dict[str, Any]]]:
    bound_seconds = tl.calls * (latency / 1000) / concurrency
    share = bound_seconds / tl.elapsed if tl.elapsed else 0.0
    tail = tl.elapsed - tl.last_call_seconds if tl.last_call_seconds else None
    note = (
        f"{tl.calls} calls; {tl.results_ok}/{tl.total} results ok; judge bound "
        f"{bound_seconds:.1f} s; peak {tl.max_in_flight} in flight"
    )
    return share, [
        _row(f"{label}: POST to done", round(tl.elapsed, 1), "s", note=note),
        _row(
            f"{label}: bound / POST to done",
            round(100 * share, 1),
            "%",
            f">= {100 * target:.0f}",
            share >= target and tl.status == "done",
            note,
        ),
        _row(f"{label}: the POST", round(1000 * tl.post_seconds), "ms"),
        _row(
            f"{label}: judge's mean calls in flight (its busy seconds / POST to done)",
            round(tl.judge_busy_seconds / tl.elapsed, 1) if tl.elapsed else None,
            "calls",
            note=f"of {concurrency} allowed",
        ),
        _row(
            f"{label}: judge's mean seconds per call (its latency: {latency} ms)",
            round(tl.judge_busy_seconds / tl.calls, 3) if tl.calls else None,
            "s",
        ),
        _row(
            f"{label}: POST to first judge call (fan-out, dispatch start)",
            None if tl.first_call_seconds is None else round(tl.first_call_seconds, 2),
            "s",
        ),
        _row(
            f"{label}: last judge reply to done (tail)",
            None if tail is None else round(tail, 2),
            "s",
        ),
    ]


def _e2e_row(
    database_url: str,
    redis_url: str,
    latency: int,
    concurrency: int,
    items: int,
    target: float,
) -> tuple[float, list[dict[str, Any]]]:
    label = f"{latency / 1000:g} s × {concurrency}, {items:,} items"
    judge_process, judge_url = start_offline_judge(latency)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    stack = Stack(
        "Procfile.serve",
        ["web", "worker", "beat"],
        serve_env(database_url, redis_url, judge_url),
        log_dir,
    )
    try:
        stack.start()
        token = create_user_and_token(stack, "bench-serve", PASSWORD)
        api = Api(stack.url, token)
        project_id, judge_id = _project_with_judge(
            api, f"bench-serve-{time.time_ns()}", judge_url, concurrency
        )
        dataset_id = _upload(api, project_id, "e2e", items)
        scorer_ids = _scorers(api, project_id, judge_id, ("faithfulness",))
        _, tl = follow_run(
            api,
            project_id,
            {"dataset_id": dataset_id, "scorer_ids": scorer_ids},
            judge_url.removesuffix("/v1") + "/_stats",
        )
        api.close()
        return _timeline_rows(label, tl, latency, concurrency, target)
    finally:
        stack.stop()
        stop_process(judge_process)


# 2. Fifty reviewers ------------------------------------------------------------------


def _load_setup(run_id: int, project_id: int, work_dir: Path) -> dict[str, Any]:
    """Reviewers, an overlap-3 queue of open entries, and each reviewer's share of the
    work (queue positions, override targets), written where the locust users read it."""
    from django.contrib.auth import get_user_model

    from evalsite.accounts.models import Membership, Role
    from evalsite.evals.models import Result
    from evalsite.review.models import FinalRule, QueueEntry, ReviewQueue
    from scoring import KINDS

    User = get_user_model()
    users = []
    for i in range(LOAD_USERS):
        user, created = User.objects.get_or_create(username=f"bench-reviewer-{i:02d}")
        if created or not user.check_password(PASSWORD):
            user.set_password(PASSWORD)
            user.save()
        Membership.objects.get_or_create(
            project_id=project_id, user=user, defaults={"role": Role.REVIEWER}
        )
        users.append(user.username)
    results = list(
        Result.objects.filter(
            run_id=run_id, status="ok", run_scorer__kind="faithfulness"
        )
        .order_by("id")
        .values_list("id", "final_analysis")
    )
    rng = random.Random(5)
    rng.shuffle(results)
    in_queue = results[:LOAD_QUEUE_SIZE]
    queue = ReviewQueue.objects.create(
        project_id=project_id,
        run_id=run_id,
        name=f"bench-serve overlap 3 {time.time_ns()}",
        overlap=3,
        final_rule=FinalRule.MAJORITY,
        size=len(in_queue),
    )
    QueueEntry.objects.bulk_create(
        QueueEntry(
            queue=queue, result_id=rid, position=pos, state=QueueEntry.State.OPEN
        )
        for pos, (rid, _) in enumerate(in_queue, 1)
    )
    allowed = KINDS["faithfulness"].overridable["verdicts.*.verdict"]
    spare = results[LOAD_QUEUE_SIZE:]
    work = {}
    for i, name in enumerate(users):
        # Three reviewers per entry: reviewer i answers positions p with
        # (p - 1) % 50 in {i, i - 1, i - 2}.
        positions = [
            p
            for p in range(1, len(in_queue) + 1)
            if (p - 1 - i) % LOAD_USERS in (0, LOAD_USERS - 1, LOAD_USERS - 2)
        ]
        overrides = []
        for rid, analysis in spare[i * 20 : (i + 1) * 20]:
            verdicts = (analysis or {}).get("verdicts") or []
            if not verdicts:
                continue
            current = verdicts[0].get("verdict")
            overrides.append(
                {"id": rid, "value": next(v for v in allowed if v != current)}
            )
        work[name] = {"positions": positions, "overrides": overrides}
    config = {
        "project_id": project_id,
        "run_id": run_id,
        "queue_id": queue.pk,
        "password": PASSWORD,
        "users": users,
        "work": work,
        "result_ids": [rid for rid, _ in results[:5000]],
        "log_dir": str(work_dir),
    }
    (work_dir / "config.json").write_text(json.dumps(config))
    return config


def _recount_mismatches(run_id: int, api: Api) -> list[str]:
    """Every aggregate the API shows for the run against a recount from its rows."""
    from evalsite.evals.models import Result

    problems = []
    for agg in api.get(f"/runs/{run_id}/aggregates"):
        rows = list(
            Result.objects.filter(
                run_id=run_id, run_scorer_id=agg["run_scorer_id"]
            ).values("status", "final_passed", "judge_passed", "reviewed", "overridden")
        )
        ok = [r for r in rows if r["status"] == "ok"]
        expected = {
            "total": len(rows),
            "ok": len(ok),
            "reviewed": sum(r["reviewed"] for r in ok),
            "overridden": sum(r["overridden"] for r in ok),
        }
        passed = [r["final_passed"] for r in ok if r["final_passed"] is not None]
        judged = [r["judge_passed"] for r in ok if r["judge_passed"] is not None]
        for key, value in expected.items():
            if agg[key] != value:
                problems.append(
                    f"{agg['name']} {key}: shown {agg[key]}, recount {value}"
                )
        for key, values in (("final_pass_rate", passed), ("judge_pass_rate", judged)):
            recount = sum(values) / len(values) if values else None
            shown = agg[key]
            if (shown is None) != (recount is None) or (
                recount is not None and abs(shown - recount) > 1e-9
            ):
                problems.append(
                    f"{agg['name']} {key}: shown {shown}, recount {recount}"
                )
    return problems


def _load_test(
    database_url: str, redis_url: str, quiet: dict[tuple[int, int], float]
) -> list[dict[str, Any]]:
    latency, concurrency, items = LOAD_RUN
    judge_process, judge_url = start_offline_judge(latency)
    work_dir = Path(tempfile.mkdtemp(prefix="bench-serve-load-"))
    stack = Stack(
        "Procfile.serve",
        ["web", "worker", "beat"],
        serve_env(database_url, redis_url, judge_url),
        work_dir,
    )
    locust: subprocess.Popen[bytes] | None = None
    try:
        stack.start()
        token = create_user_and_token(stack, "bench-serve", PASSWORD)
        api = Api(stack.url, token)
        project_id, judge_id = _project_with_judge(
            api, f"bench-serve-load-{time.time_ns()}", judge_url, concurrency
        )
        # The run the reviewers work: judged first (at the judge's speed, not timed).
        stats_url = judge_url.removesuffix("/v1") + "/_stats"
        httpx.post(judge_url.removesuffix("/v1") + "/_control", json={"latency_ms": 20})
        reviewed_dataset = _upload(api, project_id, "reviewed", REVIEWED_ITEMS)
        faith = _scorers(api, project_id, judge_id, ("faithfulness",))
        reviewed_run, tl = follow_run(
            api,
            project_id,
            {"dataset_id": reviewed_dataset, "scorer_ids": faith},
            stats_url,
        )
        if tl.status != "done":
            raise RuntimeError(f"the reviewed run ended {tl.status}")
        httpx.post(
            judge_url.removesuffix("/v1") + "/_control", json={"latency_ms": latency}
        )
        config = _load_setup(reviewed_run, project_id, work_dir)
        run_dataset = _upload(api, project_id, "running", items)
        env = {
            **os.environ,
            "BENCH_LOCUST_CONFIG": str(work_dir / "config.json"),
        }
        locust = subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "locust"),
                "-f",
                str(ROOT / "bench" / "locust_reviewers.py"),
                "--headless",
                "--users",
                str(LOAD_USERS),
                "--spawn-rate",
                "10",
                "--host",
                stack.url,
                "--csv",
                str(work_dir / "locust"),
                "--only-summary",
            ],
            cwd=ROOT,
            env=env,
            stdout=open(work_dir / "locust.log", "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        # Every reviewer logged in (locust then starts its figures again) and at work
        # before the run starts.
        warmup = work_dir / "warmup.json"
        deadline = time.monotonic() + 300
        while not warmup.exists() and time.monotonic() < deadline:
            if locust.poll() is not None:
                raise RuntimeError(f"locust ended: {work_dir}/locust.log")
            time.sleep(0.5)
        time.sleep(10)
        _, tl = follow_run(
            api,
            project_id,
            {"dataset_id": run_dataset, "scorer_ids": faith},
            stats_url,
        )
        time.sleep(5)
        locust.send_signal(2)  # SIGINT: locust stops its users and writes the CSVs
        locust.wait(timeout=120)
        rows: list[dict[str, Any]] = []
        share, run_rows = _timeline_rows(
            f"beside {LOAD_USERS} reviewers: {latency / 1000:g} s × {concurrency}, "
            f"{items:,} items",
            tl,
            latency,
            concurrency,
            0.75,
        )
        rows += run_rows
        before = quiet.get((latency, concurrency))
        if before is not None:
            drop = 100 * (before - share)
            rows.append(
                _row(
                    "beside the reviewers: points under the quiet run",
                    round(drop, 1),
                    "points",
                    "<= 10",
                    drop <= 10,
                )
            )
        rows += _locust_rows(work_dir)
        rows += _answers_rows(work_dir, config)
        problems = _recount_mismatches(reviewed_run, api)
        rows.append(
            _row(
                "after the load: run aggregates that differ from a recount",
                len(problems),
                "figures",
                0,
                not problems,
                "; ".join(problems[:3]),
            )
        )
        api.close()
        return rows
    finally:
        if locust is not None and locust.poll() is None:
            locust.kill()
        stack.stop()
        stop_process(judge_process)


def _locust_rows(work_dir: Path) -> list[dict[str, Any]]:
    stats_file = work_dir / "locust_stats.csv"
    if not stats_file.exists():
        return [
            _row("load test", None, "", note=f"no locust stats: {work_dir}/locust.log")
        ]
    rows = []
    pages_p95 = []
    errors = 0
    requests = 0
    warmup_file = work_dir / "warmup.json"
    if warmup_file.exists():
        for name, entry in json.loads(warmup_file.read_text()).items():
            errors += int(entry["failures"])
            rows.append(
                _row(
                    f"reviewers: {name} p95 (warm-up: all {LOAD_USERS} log in at once, "
                    "before the run)",
                    entry["p95"],
                    "ms",
                    note=f"{entry['requests']} requests, median {entry['median']} ms; "
                    f"{entry['failures']} failed (counted in the errors below)",
                )
            )
    with stats_file.open() as handle:
        for record in csv.DictReader(handle):
            if record["Name"] == "Aggregated":
                continue
            requests += int(record["Request Count"])
            errors += int(record["Failure Count"])
            if not int(record["Request Count"]):
                continue  # the warm-up's logins, reported above
            p95 = float(record["95%"])
            if record["Type"] == "GET":
                pages_p95.append(p95)
            rows.append(
                _row(
                    f"reviewers: {record['Type']} {record['Name']} p95",
                    p95,
                    "ms",
                    f"<= {PAGE_TARGET_MS:.0f}" if record["Type"] == "GET" else None,
                    p95 <= PAGE_TARGET_MS if record["Type"] == "GET" else None,
                    f"{record['Request Count']} requests, median {record['50%']} ms",
                )
            )
    rows.append(
        _row("reviewers: requests", requests, "requests", note=f"{LOAD_USERS} users")
    )
    rows.append(_row("reviewers: errors", errors, "requests", 0, errors == 0))
    if pages_p95:
        worst = max(pages_p95)
        rows.append(
            _row(
                "reviewers: worst page p95",
                worst,
                "ms",
                f"<= {PAGE_TARGET_MS:.0f}",
                worst <= PAGE_TARGET_MS,
                "locust's client-side time on loopback",
            )
        )
    return rows


def _answers_rows(work_dir: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    accepted: set[tuple[str, int]] = set()
    for path in work_dir.glob("answers-*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            accepted.add((record["user"], int(record["position"])))
    stored = _stored_answers(config)
    missing = accepted - stored
    return [
        _row("reviewers: answers accepted", len(accepted), "answers"),
        _row(
            "reviewers: accepted answers missing afterwards",
            len(missing),
            "answers",
            0,
            not missing,
        ),
    ]


def _stored_answers(config: dict[str, Any]) -> set[tuple[str, int]]:
    from evalsite.review.models import QueueEntry, Review

    position_of = dict(
        QueueEntry.objects.filter(queue_id=config["queue_id"]).values_list(
            "result_id", "position"
        )
    )
    return {
        (name, position_of[rid])
        for name, rid in Review.objects.filter(queue_id=config["queue_id"]).values_list(
            "reviewer__username", "result_id"
        )
        if rid in position_of
    }


# 3. The embedded default -----------------------------------------------------------


def _embedded() -> list[dict[str, Any]]:
    judge_process, judge_url = start_offline_judge(15)
    var_dir = Path(tempfile.mkdtemp(prefix="bench-embedded-"))
    stack = Stack(
        "Procfile.dev",
        ["web", "worker", "beat"],
        {"EVALSITE_VAR_DIR": str(var_dir), "OFFLINE_JUDGE_URL": judge_url},
        var_dir,
    )
    try:
        stack.manage("migrate", "--noinput")
        stack.start()
        token = create_user_and_token(stack, "bench-embedded", PASSWORD)
        api = Api(stack.url, token)
        # The offline judge connection's own default concurrency (as `make run`'s
        # demo project has it): nothing configured.
        project_id, judge_id = _project_with_judge(
            api, "bench-embedded", judge_url, EMBEDDED_CONCURRENCY
        )
        dataset_id = _upload(api, project_id, "embedded", EMBEDDED_ITEMS)
        scorer_ids = _scorers(api, project_id, judge_id, EMBEDDED_KINDS)
        page = httpx.Client(base_url=stack.url, timeout=30)
        page.get("/login/")
        page.post(
            "/login/",
            data={
                "username": "bench-embedded",
                "password": PASSWORD,
                "csrfmiddlewaretoken": page.cookies.get("csrftoken", ""),
            },
        )
        # A person watching the run in a browser tab: the page polls its progress
        # region every second (hx-trigger="every 1s" in run_detail.html), and they
        # reload the whole page now and then. (Until this round the bench loaded the
        # whole page after every 0.1 s status poll, ten times what a tab asks for; the
        # web process then took a fifth of a core from the run it was watching.)
        page_ms: list[float] = []
        poll_ms: list[float] = []
        last = {"poll": 0.0, "page": 0.0}

        def timed_get(url: str, headers: dict[str, str], into: list[float]) -> None:
            t0 = time.perf_counter()
            response = page.get(url, headers=headers)
            if response.status_code == 200:
                into.append(1000 * (time.perf_counter() - t0))

        def watch_run_page(run_id: int) -> None:
            now = time.monotonic()
            run_page = f"/projects/{project_id}/runs/{run_id}/"
            if now - last["page"] >= EMBEDDED_RELOAD_SECONDS:
                last["page"] = last["poll"] = now
                timed_get(run_page, {}, page_ms)
            elif now - last["poll"] >= 1.0:
                last["poll"] = now
                timed_get(
                    f"{run_page}progress",
                    {"HX-Request": "true", "HX-Target": "run-progress"},
                    poll_ms,
                )

        _, tl = follow_run(
            api,
            project_id,
            {"dataset_id": dataset_id, "scorer_ids": scorer_ids},
            judge_url.removesuffix("/v1") + "/_stats",
            on_tick=watch_run_page,
        )
        page.close()
        api.close()
        n_results = EMBEDDED_ITEMS * len(EMBEDDED_KINDS)
        note = (
            f"{EMBEDDED_ITEMS:,} items × {', '.join(EMBEDDED_KINDS)}; {tl.calls} calls; "
            f"{tl.results_ok}/{tl.total} ok; SQLite + filesystem transport, Procfile.dev"
        )
        rows = [
            _row(
                f"embedded default: {n_results:,}-result run, POST to done",
                round(tl.elapsed, 1),
                "s",
                f"<= {EMBEDDED_TARGET_S:.0f}",
                tl.elapsed <= EMBEDDED_TARGET_S and tl.status == "done",
                note,
            ),
            _row(
                "embedded default: POST to first judge call",
                None
                if tl.first_call_seconds is None
                else round(tl.first_call_seconds, 2),
                "s",
            ),
        ]
        for label, samples in (
            ("run page (whole page) while the run judges", page_ms),
            ("run page's progress poll while the run judges", poll_ms),
        ):
            if samples:
                p95 = percentile(samples, 0.95)
                rows.append(
                    _row(
                        f"embedded default: {label}, p95",
                        round(p95),
                        "ms",
                        f"<= {PAGE_TARGET_MS:.0f}",
                        p95 <= PAGE_TARGET_MS,
                        f"{len(samples)} loads, median "
                        f"{statistics.median(samples):.0f} ms (client side, runserver)",
                    )
                )
        return rows
    finally:
        stack.stop()
        stop_process(judge_process)
