"""gunicorn settings for `make serve` and the docker image (``-c docker/gunicorn.conf.py``;
the image sets EVALSITE_HOST=0.0.0.0).

Sync workers, as the docker image runs them: every request is a short database read or
write, and the slow work (judging, exports of large runs) happens on Celery workers or
streams. Two per core plus one, gunicorn's own advice, unless WEB_CONCURRENCY says.
"""

from __future__ import annotations

import multiprocessing
import os

_host = os.environ.get("EVALSITE_HOST", "127.0.0.1")
bind = f"{_host}:{os.environ.get('EVALSITE_PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * multiprocessing.cpu_count() + 1)
# A request that takes longer than this is stuck (exports stream, judging is on Celery).
timeout = 120
accesslog = "-"
