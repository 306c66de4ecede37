from __future__ import annotations

import os

from celery import Celery

from evalsite.lib import fstransport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

fstransport.register()
app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
