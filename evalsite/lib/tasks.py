"""The one way tasks are sent: by name, through these two functions.

By name rather than `task.delay`: a service that sends a task must not import the task
module (the tasks import the services, so that would be a cycle, and the import-linter
forbids evals services importing evals tasks); sending by name works from anywhere and
every sender looks alike. Task names are `<app>.<noun>_<verb>`.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction


def task_send(name: str, *args: Any, queue: str | None = None) -> None:
    """Send task `name` with `args` (JSON values). A signature by name obeys
    CELERY_TASK_ALWAYS_EAGER (tests) as Task.delay does, which app.send_task would not."""
    options = {"queue": queue} if queue else {}
    current_app.signature(name, args=args, **options).apply_async()


def task_send_on_commit(
    name: str, *args: Any, queue: str | None = None, robust: bool = False
) -> None:
    """task_send once the open transaction commits (at once outside one). With
    `robust`, a failure to send (broker down) is logged instead of raised: for work
    that has another way to get done."""

    # A function, not a functools.partial: a robust callback that fails is logged by
    # its __qualname__, which a partial lacks.
    def send() -> None:
        task_send(name, *args, queue=queue)

    transaction.on_commit(send, robust=robust)
