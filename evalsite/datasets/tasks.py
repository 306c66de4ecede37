from __future__ import annotations

from celery import shared_task

from evalsite.datasets.matching.services import (
    DATASET_VERSIONS_MATCH_TASK,
    dataset_versions_match,
)
from evalsite.datasets.models import Item
from evalsite.datasets.services import DATASET_ITEMS_ANALYZE_TASK
from evalsite.datasets.uploads import uploads_cleanup
from evalsite.lib.db import table_analyze


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


@shared_task(name=DATASET_ITEMS_ANALYZE_TASK)
def dataset_items_analyze() -> None:
    """Refresh the items table's statistics (sent by an upload on commit)."""
    table_analyze(Item)


@shared_task(name=DATASET_VERSIONS_MATCH_TASK, acks_late=True)
def dataset_versions_match_task(dataset_id: int) -> int:
    """Match a new dataset version with its previous version (sent by the upload on
    commit). Safe to run again: a stored matching is kept. Returns how many rules
    were matched."""
    return len(dataset_versions_match(dataset_id=dataset_id))


# The task's name while dataset matching lived in review: the same function, kept
# registered for one release so that a message already queued under it is not lost.
# Remove it in the next release.
dataset_versions_match_drain = shared_task(
    name="review.dataset_versions_match", acks_late=True
)(dataset_versions_match_task.run)
