"""Celery adapters of the run services: ids in, a service call, nothing else."""

from __future__ import annotations

from celery import current_app, shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

# Result tasks go to the scoring queue (services pass queue=CeleryQueue.SCORING); the
# others to the default queue.
# Only infrastructure hiccups are retried here; the scoring client already retries the
# judge's HTTP errors and a judge that keeps failing fails its one result.
_TRANSIENT = (OperationalError, InterfaceError, BrokerError)
_RETRY = {
    "autoretry_for": _TRANSIENT,
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 8,
}


@shared_task(name="evals.run_fanout", **_RETRY)
def run_fanout(run_id: int) -> None:
    """Enqueue the run's pending results in chunk tasks, then start its watchdog."""
    from evalsite.evals import conf
    from evalsite.evals.services import run_fanout as run_fanout_service

    run_fanout_service(run_id=run_id)
    if not current_app.conf.task_always_eager:
        run_monitor.apply_async(args=[run_id], countdown=conf.monitor_interval())


@shared_task(name="evals.results_enqueue", **_RETRY)
def results_enqueue(run_id: int, first_id: int, last_id: int) -> None:
    from evalsite.evals.services import results_enqueue as results_enqueue_service

    results_enqueue_service(run_id=run_id, first_id=first_id, last_id=last_id)


@shared_task(name="evals.result_score", **_RETRY)
def result_score(result_id: int) -> str:
    from evalsite.evals.services import result_score as result_score_service

    return result_score_service(result_id=result_id)


@shared_task(name="evals.run_monitor", **_RETRY)
def run_monitor(run_id: int) -> None:
    """The watchdog of a running run: re-queues lost work, then ticks again later.

    A tick that another watchdog already did (None) ends this chain, so restarts do not
    multiply them; a worker (re)connection begins a fresh chain
    (evalsite.celery.RecoverRunsOnConnect).
    """
    from evalsite.evals import conf
    from evalsite.evals.models import Run
    from evalsite.evals.services import run_recover

    if run_recover(run_id=run_id) is None:
        return
    running = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).exists()
    if running and not current_app.conf.task_always_eager:
        run_monitor.apply_async(args=[run_id], countdown=conf.monitor_interval())


@shared_task(name="evals.runs_recover", **_RETRY)
def runs_recover() -> None:
    """When a worker (re)connects: give every running run a watchdog (its old one may
    have died with a killed worker or a restarted broker, with the tick it held)."""
    from evalsite.evals import conf
    from evalsite.evals.services.runs import runs_active_ids

    for run_id in runs_active_ids():
        run_monitor.apply_async(args=[run_id], countdown=conf.monitor_interval())
