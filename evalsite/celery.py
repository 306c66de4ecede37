from __future__ import annotations

import os
from typing import Any

from celery import Celery, bootsteps, signals

from evalsite.lib import fstransport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

fstransport.register()
app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class RecoverRunsOnConnect(bootsteps.StartStopStep):
    """Give every running run a watchdog whenever the worker's consumer (re)connects.

    The consumer starts its steps again after a lost broker connection, and it drops
    the tasks it had reserved, counting on the broker to hand them out again; a Redis
    that restarted without persistence has lost them, the watchdog's scheduled tick
    among them. A fresh watchdog re-queues the lost work (duplicate chains end
    themselves, see evals.tasks.run_monitor).
    """

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: object) -> None:
        from evalsite.evals.tasks import runs_recover

        runs_recover.delay()


app.steps["consumer"].add(RecoverRunsOnConnect)


@signals.task_prerun.connect
@signals.task_postrun.connect
def close_old_db_connections(sender: Any = None, **kwargs: Any) -> None:
    """Around each task, what Django does around each request: drop the thread's
    database connection if it broke, outlived CONN_MAX_AGE or was left mid-transaction,
    and health-check it before its next use (settings.CELERY_DB_REUSE_MAX)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # inside the caller's transaction (tests, eager mode): leave it alone
    from django.db import close_old_connections

    close_old_connections()
