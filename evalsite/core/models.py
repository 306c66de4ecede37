from __future__ import annotations

from django.db import models


class WorkerPing(models.Model):
    """Written by the `core.ping_write` task: proof that a worker reached the database."""

    marker = models.CharField(max_length=100, unique=True)
    hostname = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.marker
