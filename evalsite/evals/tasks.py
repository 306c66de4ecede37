"""Celery adapters of the run services: ids in, a service call, nothing else."""

from __future__ import annotations

from typing import TypedDict

from celery import shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

from evalsite.evals.engine import dispatch
from evalsite.evals.runs import services as run_services
from evalsite.evals.runs.services import runs_active_ids

# Dispatch tasks go to the scoring queue (services pass queue=CeleryQueue.SCORING); the
# others to the default queue. Every task is sent by name (evalsite/lib/tasks.py).
# Only infrastructure hiccups are retried here; the scoring client already retries the
# judge's HTTP errors and a judge that keeps failing fails its one result.
_TRANSIENT = (OperationalError, InterfaceError, BrokerError)


class _RetryOptions(TypedDict):
    autoretry_for: tuple[type[Exception], ...]
    retry_backoff: bool
    retry_backoff_max: int
    max_retries: int


_RETRY: _RetryOptions = {
    "autoretry_for": _TRANSIENT,
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 8,
}


@shared_task(name="evals.run_fanout", **_RETRY)
def run_fanout(run_id: int) -> None:
    """Enqueue the run's pending results in chunk tasks (beat runs the watchdog)."""
    run_services.run_fanout(run_id=run_id)


@shared_task(name="evals.run_dispatch", **_RETRY)
def run_dispatch(run_id: int) -> dict[str, int | bool]:
    """Judge the run's pending results, many calls in flight (engine/dispatch.py)."""
    outcome = dispatch.run_dispatch(run_id=run_id)
    return {
        "judged": outcome.judged,
        "errors": outcome.errors,
        "skipped": outcome.skipped,
        "more": outcome.more,
    }


# The previous release judged one result per message under this name. It stays
# registered for one release so that messages still queued for it are not lost: each
# hands its result to the dispatcher. Remove it in the next release.
@shared_task(name="evals.result_score", **_RETRY)
def result_score_drain(result_id: int) -> None:
    """A queued message of the old single-result task: judge its result through the
    dispatcher (with the rest of its run's pending results)."""
    dispatch.result_dispatch(result_id=result_id)


@shared_task(name="evals.runs_recover", **_RETRY)
def runs_recover() -> None:
    """The run watchdog, sent by celery beat every monitor interval (see
    CELERY_BEAT_SCHEDULE): one recovery tick for each running run.

    Safe to run twice or concurrently: a tick is taken with a conditional UPDATE
    (run_recover returns None when another one just ticked), and re-queued results are
    judged only by the task that claims them. A retry after a transient error does again
    only the ticks that were not taken.
    """
    for run_id in runs_active_ids():
        run_services.run_recover(run_id=run_id)
