"""Celery adapters of the webhook services: ids in, a service call, nothing else."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import InterfaceError, OperationalError

from evalsite.webhooks import conf, services

_TRANSIENT = (OperationalError, InterfaceError)


@shared_task(
    name="webhooks.run_event",
    autoretry_for=_TRANSIENT,
    retry_backoff=True,
    max_retries=5,
)
def run_event(run_id: int) -> int:
    """A run finished: make its deliveries. Sent by evals when a run finishes."""
    return len(services.run_event(run_id=run_id))


@shared_task(
    name="webhooks.queue_event",
    autoretry_for=_TRANSIENT,
    retry_backoff=True,
    max_retries=5,
)
def queue_event(queue_id: int) -> int:
    """A queue's result was reviewed: queue.completed if it was the last one."""
    return len(services.queue_event(queue_id=queue_id))


@shared_task(bind=True, name="webhooks.delivery_send", max_retries=None)
def delivery_send(self: Any, delivery_id: int) -> str:
    """One attempt at a delivery; a failed one is retried with backoff until
    WEBHOOK_MAX_ATTEMPTS attempts of this round were made."""
    retries = self.request.retries
    outcome = services.delivery_attempt(
        delivery_id=delivery_id, final=retries + 1 >= conf.max_attempts()
    )
    if outcome is services.Outcome.RETRY:
        raise self.retry(countdown=conf.backoff_seconds(retries))
    return str(outcome.value)
