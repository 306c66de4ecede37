"""evalsite.wsgi: a server process has loaded every view before its first request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wsgi_module_loads_the_urlconf_before_any_request() -> None:
    # A fresh interpreter, as a gunicorn worker is: what the module loads is what
    # the worker's first request no longer pays for.
    probe = (
        "import sys, evalsite.wsgi\n"
        "from django.db import connections\n"
        "print('evalsite.urls' in sys.modules, 'evalsite.review.explorer.views' in sys.modules,"
        " any(c.connection is not None for c in connections.all()))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.split() == ["True", "True", "False"]
