from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
application = get_wsgi_application()
# The URLconf (every view module and the API's schemas) loads with the process rather
# than on its first request: 0.6-0.8 s of CPU that fell on whichever request reached
# each gunicorn worker first. bench_serve's runs start right after `make serve` comes
# up, and the POST that starts one took 1.2 s when it met a fresh worker, 0.2-0.3 s
# otherwise (4 points of the 1 s x 128 run's share of its bound).
get_resolver().url_patterns  # noqa: B018 - loading it is the point
# Nothing above should have connected; a connection opened before gunicorn forks its
# workers (preload) would be shared by all of them.
connections.close_all()
# What start-up loaded (settings, apps, models, views) lives as long as the process:
# frozen, it is no longer walked by every full pass of the cyclic garbage collector,
# which otherwise lands on a request now and then and shows in the latency tail.
gc.freeze()
