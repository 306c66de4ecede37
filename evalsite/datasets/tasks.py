from __future__ import annotations

from celery import shared_task

from evalsite.datasets.uploads import uploads_cleanup


@shared_task(name="datasets.uploads_cleanup")
def dataset_uploads_cleanup() -> int:
    """Delete upload files abandoned between the preview and mapping steps (> 1 hour old)."""
    return uploads_cleanup()


# The task's name before tasks were named `<app>.<noun>_<verb>`: the same function, kept
# registered for one release so that a message already queued under it (or a beat still
# running the old schedule) is not lost. Remove it in the next release.
dataset_uploads_cleanup_drain = shared_task(
    name="evalsite.datasets.tasks.dataset_uploads_cleanup"
)(dataset_uploads_cleanup.run)
