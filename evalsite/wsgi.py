from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
application = get_wsgi_application()
# What start-up loaded (settings, apps, models) lives as long as the process: frozen,
# it is no longer walked by every full pass of the cyclic garbage collector, which
# otherwise lands on a request now and then and shows in the latency tail.
gc.freeze()
