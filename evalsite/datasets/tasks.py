from __future__ import annotations

from celery import shared_task


@shared_task
def dataset_uploads_cleanup() -> int:
    """Delete upload files abandoned between the preview and mapping steps (> 1 hour old)."""
    from evalsite.datasets.uploads import uploads_cleanup

    return uploads_cleanup()
