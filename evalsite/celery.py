from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals

from evalsite.lib import fstransport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

fstransport.register()
app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Periodic work (the run watchdog, the upload sweep) is sent by `celery beat` from
# settings.CELERY_BEAT_SCHEDULE; no task reschedules itself and no worker hook starts any.


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
