"""Deleting a 200k-result run and its dataset (section "delete").

Builds a 100k-item dataset and a run on it with two scorers (200k results, each with
an analysis of about 0.5 KB), judge calls on 20k results, overrides and comments on
5,000, and a closed review queue of 10,000 entries with an answer each. Then times,
in this process, what the housekeeping page and its form run: `deletion_plan` (the
confirmation page's counts) and `object_delete` (the deletion, in its transaction),
first for the run, then, with the run built again, for the dataset (its items, the
run and all that goes with it). Each step reports wall time and peak RSS growth over
the baseline taken just before it.

The data is built for every bench run (deleting it is what is measured); building it
takes 2 to 5 minutes on the shared 2-core machine. Run alone: `python -m bench
bench_delete`. Targets: the plan (a page a user waits for) ≤ 10 s, the deletion ≤ 60 s
(half of gunicorn's 120 s timeout, docker/gunicorn.conf.py), each with a peak RSS
growth ≤ 100 MB (none of the rows is held in the process).

Figures (three runs, load average 5 to 9): with Django's deletion Collector the run's
plan took 72 s and 221 MB, its deletion 87 s and 124 MB more, the dataset's plan 21 s
and 218 MB, its deletion 76 s and 113 MB; counting and deleting by querysets
(evalsite.lib.cascade) 1.6-2.8 s, 21-25 s, 3.0-3.6 s and 21-31 s, each with under
0.1 MB of RSS growth. What is left of a deletion's time is Postgres checking, at
commit, the foreign keys to every deleted result (five tables) and item (three): 20 s
of a 22 s deletion of the run, measured apart with SET CONSTRAINTS ALL IMMEDIATE. A
one-off run at a million results (200k items × 5 scorers, at load 9 to 11): plan 5.9 s,
deletion 126 s, no RSS growth; that deletion outlasts gunicorn's timeout.

Since a deletion of more than DELETE_INLINE_MAX_ROWS rows runs on a worker, the run is
deleted as a user does it: the delete page's confirmed POST (which only marks the run
and sends the task) and then the task. Two runs at a load average of 6: the request
1.2 s (cold: the first request of the process, and the row limit counted through a
UNION of the results' two paths), then, warmed and counting a path at a time, 0.08 s
(in a profile) and 0.12 s; the task 8.6 s and 11.9 s, against 21-25 s for the same
deletion inside the request before.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

from bench._common import (
    PeakRss,
    allow_testserver,
    bench_member,
    create_scorers,
    replace_dataset,
    rss_bytes,
    settle_database,
    setup_row,
)

SECTION = "delete"
N_ITEMS = 100_000
N_SCORERS = 2
N_RESULTS = N_ITEMS * N_SCORERS
N_JUDGE_CALLS = 20_000
N_NOTES = 5_000
N_QUEUED = 10_000
BATCH = 5_000
TARGET_PLAN_SECONDS = 10.0
TARGET_DELETE_SECONDS = 60.0
# The confirmed delete of a run too large for a request only marks it and sends the
# task (evalsite/review/housekeeping/services.py object_delete_request).
TARGET_REQUEST_SECONDS = 1.0
TARGET_MB = 100.0
DATASET_NAME = "bench-delete-100k"


def _item_fields(i: int) -> dict[str, Any]:
    return {
        "input": f"Question {i}: what does the report say about revenue in region {i % 17}?",
        "output": f"Revenue in region {i % 17} grew by {i % 9} percent.",
        "reference": f"Grew {i % 9}%",
    }


def _analysis(i: int) -> dict[str, Any]:
    claims = [f"Claim {n} of answer {i}: revenue in region {n} grew." for n in range(4)]
    return {
        "claims": claims,
        "verdicts": [
            {"verdict": "yes" if n % 3 else "no", "reason": "The context says so."}
            for n in range(4)
        ],
    }


def _build_run(project: Any, dataset: Any, user: Any) -> Any:
    """A finished run of `dataset` with its results, judge calls, overrides,
    comments and a closed queue with answers (bulk inserts)."""
    from django.db import transaction

    from evalsite.evals.models import Comment, JudgeCall, Override, Result, Run
    from evalsite.review.models import QueueEntry, Review, ReviewQueue

    with transaction.atomic():
        run = Run.objects.create(
            project=project, dataset=dataset, status="done", total=N_RESULTS
        )
        scorers = create_scorers(
            run, [("Faithfulness", "faithfulness"), ("Hallucination", "hallucination")]
        )
        item_ids = list(dataset.items.order_by("index").values_list("id", flat=True))
        for start in range(0, N_ITEMS, BATCH // N_SCORERS):
            Result.objects.bulk_create(
                Result(
                    run=run,
                    item_id=item_id,
                    run_scorer=rs,
                    status="ok",
                    judge_score=0.75,
                    final_score=0.75,
                    judge_passed=True,
                    final_passed=True,
                    reason="3 of 4 claims are supported by the context.",
                    analysis=_analysis(item_id),
                )
                for item_id in item_ids[start : start + BATCH // N_SCORERS]
                for rs in scorers
            )
        ids = list(run.results.order_by("id").values_list("id", flat=True))
        for start in range(0, N_JUDGE_CALLS, BATCH):
            JudgeCall.objects.bulk_create(
                JudgeCall(
                    result_id=pk,
                    step="claims",
                    messages=[{"role": "user", "content": "Extract the claims."}],
                    raw_response='{"claims": ["a", "b", "c", "d"]}',
                    prompt_tokens=850,
                    completion_tokens=120,
                )
                for pk in ids[start : min(start + BATCH, N_JUDGE_CALLS)]
            )
        Override.objects.bulk_create(
            Override(result_id=pk, kind="score", new_value=0.5, note="too generous")
            for pk in ids[:N_NOTES]
        )
        Comment.objects.bulk_create(
            Comment(result_id=pk, user=user, body="Check claim 2.")
            for pk in ids[N_NOTES : 2 * N_NOTES]
        )
        queue = ReviewQueue.objects.create(
            project=project, run=run, name="spot check", archived=True
        )
        queued = ids[-N_QUEUED:]
        QueueEntry.objects.bulk_create(
            QueueEntry(queue=queue, result_id=pk, position=n + 1, state="decided")
            for n, pk in enumerate(queued)
        )
        Review.objects.bulk_create(
            Review(queue=queue, result_id=pk, reviewer=user, passed=True)
            for pk in queued
        )
    return run


def _measure(
    section_name: str, target_seconds: float, step: Callable[[], Any]
) -> list[dict]:
    gc.collect()
    baseline = rss_bytes()
    with PeakRss() as peak:
        started = time.perf_counter()
        step()
        seconds = time.perf_counter() - started
    growth_mb = (peak.peak - baseline) / 1e6
    return [
        {
            "section": SECTION,
            "name": f"{section_name}: wall time",
            "value": seconds,
            "unit": "s",
            "target": f"≤ {target_seconds:g}",
            "ok": seconds <= target_seconds,
        },
        {
            "section": SECTION,
            "name": f"{section_name}: peak RSS growth",
            "value": growth_mb,
            "unit": "MB",
            "target": f"≤ {TARGET_MB:g}",
            "ok": growth_mb <= TARGET_MB,
        },
    ]


def _client(project: Any, user: Any) -> Any:
    """A test client logged in as `user`, warmed by one page (the first request
    of a process imports the views and builds the API; a worker that serves users
    has done that long before)."""
    from django.test import Client

    allow_testserver()
    client = Client()
    client.force_login(user)
    client.get(f"/projects/{project.pk}/runs")
    return client


def _request_delete(client: Any, project: Any, run: Any) -> tuple[Any, ...]:
    """POST the delete page's confirmation; return the task's args. The task is
    caught instead of sent (no worker here): the next step runs it."""
    from evalsite.review.housekeeping import services

    url = f"/projects/{project.pk}/runs/{run.pk}/delete"
    caught: list[tuple[Any, ...]] = []
    with mock.patch.object(
        services,
        "task_send_on_commit",
        autospec=True,
        side_effect=lambda name, *args: caught.append(args),
    ):
        response = client.post(url, {"confirm": str(run)})
    if response.status_code != 302 or len(caught) != 1:
        raise RuntimeError(f"the delete answered {response.status_code}, {caught}")
    return caught[0]


def run() -> list[dict]:
    from evalsite.accounts.models import Role
    from evalsite.datasets.models import Dataset
    from evalsite.evals.models import Run
    from evalsite.review.housekeeping.selectors import deletion_plan
    from evalsite.review.housekeeping.services import object_delete
    from evalsite.review.tasks import review_object_delete

    setup_started = time.perf_counter()
    user, project = bench_member("bench-delete", Role.OWNER)
    # What a failed bench left behind (its runs keep the dataset from going).
    Run.objects.filter(project=project).delete()
    dataset = replace_dataset(project, DATASET_NAME, N_ITEMS, BATCH, _item_fields)
    bench_run = _build_run(project, dataset, user)
    setup_seconds = time.perf_counter() - setup_started
    settle_database()
    rows: list[dict] = [setup_row(SECTION, setup_seconds)]
    rows[0]["name"] = "setup (100k items, a run of 200k results)"
    # Only the counts are kept: the plan (and anything it holds) is freed before the
    # next step's baseline.
    counts: list[dict[str, int]] = []
    rows += _measure(
        "plan of a 200k-result run",
        TARGET_PLAN_SECONDS,
        lambda: counts.append(deletion_plan(kind="runs", obj=bench_run).counts),
    )
    if counts[0].get("results") != N_RESULTS:
        raise RuntimeError(f"the plan counted {counts[0]}")
    sent: list[tuple[Any, ...]] = []
    client = _client(project, user)
    rows += _measure(
        "request: confirmed delete of a 200k-result run (view)",
        TARGET_REQUEST_SECONDS,
        lambda: sent.append(_request_delete(client, project, bench_run)),
    )
    rows += _measure(
        "task: delete that marked run (review.object_delete)",
        TARGET_DELETE_SECONDS,
        lambda: review_object_delete(*sent[0]),
    )
    if Run.objects.filter(pk=bench_run.pk).exists():
        raise RuntimeError("the task did not delete the run")
    _build_run(project, dataset, user)
    settle_database()
    rows += _measure(
        "plan of a 100k-item dataset with that run",
        TARGET_PLAN_SECONDS,
        lambda: counts.append(deletion_plan(kind="datasets", obj=dataset).counts),
    )
    if counts[1].get("items") != N_ITEMS or counts[1].get("results") != N_RESULTS:
        raise RuntimeError(f"the plan counted {counts[1]}")
    rows += _measure(
        "delete a 100k-item dataset with that run",
        TARGET_DELETE_SECONDS,
        lambda: object_delete(kind="datasets", obj=dataset, user=user),
    )
    if Dataset.objects.filter(pk=dataset.pk).exists():
        raise RuntimeError("the dataset was not deleted")
    return rows
