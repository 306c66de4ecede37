"""The judge lab (section "lab"):

- replay: a candidate and the current version of a one-call scorer (custom_rubric)
  replayed over N human-labelled results (default 2,000: 2 × N judge calls) through
  the lab's service, the configured broker and the worker command of Procfile.dev,
  against the offline judge in its own process at 1 s latency with the judge
  connection's max_concurrency 128. The bound is 128 calls/s; the figure is the calls
  the judge answered over the time from the replay's start to its last result, as a
  share of the bound (target ≥ 85 %).
- page: the lab page of a scorer with 5 versions side by side (the current one and 4
  candidates, each replayed) over 2,000 labels, server time p50 / p95 (target p95 ≤
  300 ms), built without judge calls.

BENCH_LAB_LABELS sets N for the replay, BENCH_LAB_PAGE_LABELS for the page (e.g. 300
on a busy machine). Creates scratch
projects and deletes them afterwards. Run alone: `python -m bench bench_lab`.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import httpx

from bench._common import (
    allow_testserver,
    latency_rows,
    settle_database,
    start_offline_judge,
    stop_process,
    time_get,
)
from bench.bench_runs import (
    _group_cpu_seconds,
    _start_worker,
    _stop,
    shipped_worker_command,
)

ROOT = Path(__file__).resolve().parent.parent
SECTION = "lab"
LABELS = int(os.environ.get("BENCH_LAB_LABELS", 2000))
PAGE_LABELS = int(os.environ.get("BENCH_LAB_PAGE_LABELS", 2000))
LATENCY_MS = 1000
CONCURRENCY = 128
REPLAY_TARGET = 0.85
PAGE_TARGET_MS = 300.0
CANDIDATES = 4
REPEAT = 15


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


def _labelled(project: Any, user: Any, judge: Any, n: int) -> tuple[Any, Any]:
    """A custom_rubric scorer and a done run of it over n items, every result
    reviewed (the human fails every 3rd, the judge every 5th), without judge calls."""
    from django.utils import timezone

    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals.models import Result, Run, RunScorer
    from evalsite.evals.scorers import services as scorer_services

    tag = f"{project.pk}-{time.time_ns()}"
    dataset = Dataset.objects.create(
        project=project, name="labels", file_format="jsonl", item_count=n
    )
    Item.objects.bulk_create(
        Item(
            dataset=dataset,
            index=i,
            input=f"How long do refunds for order {tag}-{i} take?",
            output=f"Refunds for order {tag}-{i} are processed within {i % 9 + 1} days.",
            context=[f"Refunds for order {tag}-{i} take 5 days."],
            reference="",
        )
        for i in range(n)
    )
    scorer = scorer_services.scorer_create(
        project=project,
        user=user,
        name="Rubric",
        kind="custom_rubric",
        judge=judge,
        options={"rubric_prompt": "Is this answer supported? {{output}}"},
    )
    now = timezone.now()
    run = Run.objects.create(
        project=project,
        dataset=dataset,
        status=Run.Status.DONE,
        finished_at=now,
        total=n,
    )
    rs = RunScorer.objects.create(
        run=run,
        scorer=scorer,
        name=scorer.name,
        kind=scorer.kind,
        options=scorer.options,
        judge=judge,
    )
    Result.objects.bulk_create(
        Result(
            run=run,
            run_scorer=rs,
            item=item,
            status=Result.Status.OK,
            judge_score=0.0 if i % 5 == 0 else 1.0,
            judge_passed=i % 5 != 0,
            final_passed=i % 3 != 0,
            reviewed=True,
            reviewed_by=user,
            reviewed_at=now,
        )
        for i, item in enumerate(dataset.items.order_by("index"))
    )
    return scorer, dataset


def _cleanup(project: Any) -> None:
    from evalsite.evals.models import Result, Run, ScorerConfig

    Result.objects.filter(run__project=project).delete()
    Run.objects.filter(project=project).delete()
    ScorerConfig.objects.filter(project=project).delete()
    project.delete()


def _replay_rows() -> list[dict[str, Any]]:
    from celery import current_app
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from evalsite.accounts.models import Membership, Project
    from evalsite.evals.judges import services as judge_services
    from evalsite.evals.models import JudgeCacheEntry, Result, Run
    from evalsite.review.lab.selectors import labels
    from evalsite.review.lab.services import (
        lab_candidate_create,
        lab_candidate_update,
        lab_replay_start,
    )

    current_app.conf.task_always_eager = False
    bench_started = timezone.now()
    bound = CONCURRENCY / (LATENCY_MS / 1000)
    judge_process, judge_url = start_offline_judge(LATENCY_MS)
    stats_url = judge_url.removesuffix("/v1") + "/_stats"
    stats_client = httpx.Client(timeout=5)
    project = Project.objects.create(name=f"bench-lab-replay-{int(time.time())}")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    worker = None
    try:
        user, _ = get_user_model().objects.get_or_create(username="bench-lab")
        Membership.objects.create(project=project, user=user, role="owner")
        judge = judge_services.judge_create_offline(project)
        judge.base_url = judge_url
        judge.max_concurrency = CONCURRENCY
        judge.requests_per_minute = 0
        judge.save()
        scorer, _dataset = _labelled(project, user, judge, LABELS)
        scorer.project = project
        candidate = lab_candidate_create(scorer=scorer, user=user, name="stricter")
        candidate.project = project
        lab_candidate_update(
            candidate=candidate,
            user=user,
            name="stricter",
            rubric="Fail an answer whose number of days differs from the context.",
            judge_model="",
            judge_temperature=None,
        )
        label_list = labels(project_id=project.pk, kind=scorer.kind)
        settle_database()
        worker = _start_worker(log_dir, judge_url, name="bench-lab")
        time.sleep(6)  # let the worker boot before the clock starts
        cpu_before = _group_cpu_seconds(worker.pid)
        started = timezone.now()
        replay = lab_replay_start(candidate=candidate, user=user, label_list=label_list)
        run_ids = [
            *replay.current_runs.values_list("pk", flat=True),
            *replay.candidate_runs.values_list("pk", flat=True),
        ]
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            if not Run.objects.filter(pk__in=run_ids).exclude(
                status__in=list(Run.FINISHED)
            ):
                break
            time.sleep(0.25)
        cpu = _group_cpu_seconds(worker.pid) - cpu_before
        stats = stats_client.get(stats_url).json()
        results = Result.objects.filter(run_id__in=run_ids)
        ok_results = results.filter(status="ok").count()
        last = max(r.updated_at for r in results.only("updated_at"))
        elapsed = (last - started).total_seconds()
        calls = stats["completed"]
        share = calls / elapsed / bound
        label = f"replay of {LABELS} labels × 2 versions, 1 s judge, 128 in flight"
        note = (
            f"{calls} calls in {elapsed:.1f} s; worker: "
            f"{' '.join(shipped_worker_command()[3:])}"
        )
        return [
            _row(f"{label}: bound", round(bound, 1), "calls/s"),
            _row(
                f"{label}: end to end / bound",
                round(100 * share, 1),
                "%",
                f">= {100 * REPLAY_TARGET:.0f}",
                share >= REPLAY_TARGET,
                note,
            ),
            _row(
                f"{label}: worker CPU per 1,000 calls",
                round(1000 * cpu / max(1, calls), 2),
                "s",
            ),
            _row(
                f"{label}: results ok",
                ok_results,
                "results",
                2 * LABELS,
                ok_results == 2 * LABELS,
            ),
        ]
    finally:
        _stop(worker)
        stats_client.close()
        stop_process(judge_process)
        JudgeCacheEntry.objects.filter(created_at__gte=bench_started).delete()
        _cleanup(project)


def _page_rows() -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from evalsite.accounts.models import Membership, Project
    from evalsite.evals.judges import services as judge_services
    from evalsite.evals.models import Result, Run, RunScorer
    from evalsite.review.lab.services import lab_candidate_create
    from evalsite.review.models import LabReplay

    allow_testserver()
    project = Project.objects.create(name=f"bench-lab-page-{int(time.time())}")
    try:
        user, _ = get_user_model().objects.get_or_create(username="bench-lab")
        Membership.objects.create(project=project, user=user, role="owner")
        judge = judge_services.judge_create_offline(project)
        scorer, dataset = _labelled(project, user, judge, PAGE_LABELS)
        scorer.project = project
        items = list(dataset.items.order_by("index").values_list("pk", flat=True))
        rng = random.Random(5)
        now = timezone.now()

        def lab_run(options: dict[str, Any], flip: float) -> Any:
            run = Run.objects.create(
                project=project,
                dataset=dataset,
                purpose="lab",
                status=Run.Status.DONE,
                finished_at=now,
                total=len(items),
            )
            rs = RunScorer.objects.create(
                run=run,
                scorer=scorer,
                name=scorer.name,
                kind=scorer.kind,
                options=options,
                judge=judge,
            )
            Result.objects.bulk_create(
                Result(
                    run=run,
                    run_scorer=rs,
                    item_id=item,
                    status=Result.Status.OK,
                    judge_passed=(i % 3 != 0) != (rng.random() < flip),
                    judge_score=1.0,
                )
                for i, item in enumerate(items)
            )
            return run

        for n in range(CANDIDATES):
            candidate = lab_candidate_create(
                scorer=scorer, user=user, name=f"candidate {n + 1}"
            )
            options = {**scorer.options, "rubric": f"rubric number {n + 1}"}
            candidate.options = options
            candidate.save(update_fields=["options"])
            replay = LabReplay.objects.create(
                project=project,
                candidate=candidate,
                scorer=scorer,
                items=len(items),
                held_out=[],
            )
            replay.current_runs.set([lab_run(scorer.options, 0.3)])
            replay.candidate_runs.set([lab_run(options, 0.3 - 0.05 * n)])
        settle_database()
        client = Client()
        client.force_login(user)
        url = reverse("review:lab", args=[project.pk, scorer.pk])
        body = client.get(url).content.decode()
        versions = body.count('data-figure="kappa"')
        samples = time_get(client, url, {}, REPEAT)
        rows = latency_rows(
            SECTION,
            f"lab page, {versions} versions × {PAGE_LABELS} labels",
            samples,
            PAGE_TARGET_MS,
        )
        rows.append(
            _row("lab page versions shown", versions, "versions", 5, versions == 5)
        )
        return rows
    finally:
        _cleanup(project)


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for part in (_page_rows, _replay_rows):
        # One part failing still reports the other's figures.
        try:
            rows += part()
        except Exception as exc:  # noqa: BLE001 - reported as a failed row
            traceback.print_exc()
            rows.append(
                _row(f"{part.__name__} failed", None, "", ok=False, note=repr(exc))
            )
    return rows


if (
    __name__ == "__main__"
):  # pragma: no cover - `python -m bench bench_lab` is the entry
    raise SystemExit("run it through the bench runner: python -m bench bench_lab")
