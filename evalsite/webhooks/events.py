"""The events a webhook may subscribe to (the payload's ``type``)."""

from __future__ import annotations

from django.db import models


class Event(models.TextChoices):
    RUN_FINISHED = "run.finished", "Run finished (every result scored)"
    RUN_FAILED = "run.failed", "Run failed (finished with errors)"
    QUEUE_COMPLETED = "queue.completed", "Review queue completed"
    COMPARE_REGRESSION = "compare.regression", "Regression against the baseline run"
