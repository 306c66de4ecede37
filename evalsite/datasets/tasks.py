from __future__ import annotations

from celery import shared_task

from evalsite.datasets.uploads import uploads_cleanup


@shared_task
def dataset_uploads_cleanup() -> int:
    """Delete upload files abandoned between the preview and mapping steps (> 1 hour old)."""
    return uploads_cleanup()
