"""The run tasks, called directly with ids; the watchdog comes from celery beat."""

from __future__ import annotations

import re
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from evalsite.celery import app
from evalsite.evals import conf, tasks
from evalsite.evals.models import Result, Run
from evalsite.evals.runs import services as run_services


def _running_run(project, owner, dataset, scorers, *, claimed_ago: timedelta) -> Run:
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, started_at=timezone.now()
    )
    Result.objects.filter(run=run).update(
        claimed_at=timezone.now() - claimed_ago, claimed_by="dead:1:x", attempts=1
    )
    return run


def test_beat_sends_the_run_watchdog_every_monitor_interval():
    entry = settings.CELERY_BEAT_SCHEDULE["runs-recover"]
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    assert entry["task"] == tasks.runs_recover.name
    assert entry["schedule"] == conf.monitor_interval()
    # A tick nobody ran in time is dropped, not stacked up behind a stopped worker.
    assert entry["options"]["expires"] <= entry["schedule"]


def test_runs_recover_requeues_a_dead_workers_results_and_is_safe_to_run_twice(
    project, owner, dataset, scorers
):
    run = _running_run(project, owner, dataset, scorers, claimed_ago=timedelta(hours=1))
    tasks.runs_recover()
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert set(run.results.values_list("attempts", flat=True)) == {2}
    done = dict(run.results.values_list("pk", "updated_at"))

    tasks.runs_recover()
    assert dict(run.results.values_list("pk", "updated_at")) == done
    assert set(run.results.values_list("attempts", flat=True)) == {2}


def test_runs_recover_twice_in_one_interval_ticks_each_run_once(
    project, owner, dataset, scorers, frozen_clock
):
    run = _running_run(project, owner, dataset, scorers, claimed_ago=timedelta(hours=1))
    tasks.runs_recover()
    # Running again (a second beat, a retried task) before the interval is over finds
    # the tick taken: nothing is re-queued a second time.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    Result.objects.filter(run=run).update(
        status=Result.Status.PENDING,
        claimed_at=timezone.now() - timedelta(hours=1),
    )
    tasks.runs_recover()
    assert set(run.results.values_list("status", flat=True)) == {"pending"}
    assert set(run.results.values_list("attempts", flat=True)) == {2}


def test_runs_recover_leaves_results_with_a_live_lease_alone(
    project, owner, dataset, scorers
):
    run = _running_run(project, owner, dataset, scorers, claimed_ago=timedelta(0))
    tasks.runs_recover()
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING
    assert set(run.results.values_list("status", flat=True)) == {"pending"}
    assert set(run.results.values_list("attempts", flat=True)) == {1}


def test_no_worker_hook_or_task_reschedules_the_watchdog():
    steps = [step.__name__ for step in app.steps["consumer"]]
    assert not any("Recover" in name for name in steps), steps


def test_every_task_is_named_app_noun_verb_and_the_old_names_stay_for_one_release():
    app.loader.import_default_modules()
    ours = {name for name in app.tasks if not name.startswith("celery.")}
    # Registered only so that messages queued by the previous release are not lost.
    drains = {
        "evals.result_score",
        "evalsite.datasets.tasks.dataset_uploads_cleanup",
        "review.bulk_action",
    }
    assert drains <= ours
    for name in ours - drains:
        app_label, _, rest = name.partition(".")
        assert app_label in {
            "compare",
            "core",
            "datasets",
            "evals",
            "review",
            "webhooks",
        }, name
        assert re.fullmatch(r"[a-z]+(_[a-z]+)+", rest), name
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in ours - drains


def test_a_queued_message_of_the_old_single_result_task_is_judged_by_the_dispatcher(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    result = run.results.order_by("pk").last()
    # A message the previous release queued for one result (eager here: run inline).
    app.signature("evals.result_score", args=[result.pk]).apply_async()
    result.refresh_from_db()
    assert result.status == Result.Status.OK
    assert result.calls.exists()
    run.refresh_from_db()
    assert run.status == Run.Status.DONE  # its run's other results went with it
    # Delivered again: nothing left to judge, nothing judged twice.
    calls = result.calls.count()
    app.signature("evals.result_score", args=[result.pk]).apply_async()
    assert result.calls.count() == calls
