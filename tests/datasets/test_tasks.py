"""The datasets tasks, sent by name as everything is (evalsite/lib/tasks.py)."""

from __future__ import annotations

import os

from evalsite.celery import app
from evalsite.datasets import uploads
from evalsite.lib.tasks import task_send


def test_the_uploads_sweep_runs_under_its_name_and_under_its_old_one(
    settings, tmp_path
):
    settings.VAR_DIR = tmp_path
    # A task sent by name runs eagerly only once its module is loaded (a worker loads
    # every app's tasks at start; nothing else imports this one).
    app.loader.import_default_modules()
    new = uploads.uploads_dir() / ("d" * 32 + ".upload")
    new.write_bytes(b"x")
    os.utime(new, (0, 0))
    task_send("datasets.uploads_cleanup")  # eager in tests: runs inline
    assert not new.exists()
    # A message the previous release (or its beat) queued under the old name.
    old = uploads.uploads_dir() / ("e" * 32 + ".upload")
    old.write_bytes(b"x")
    os.utime(old, (0, 0))
    task_send("evalsite.datasets.tasks.dataset_uploads_cleanup")
    assert not old.exists()
