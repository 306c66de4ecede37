from __future__ import annotations

import uuid

import pytest

from evalsite.core.models import WorkerPing
from evalsite.core.tasks import ping_write
from tests.integration.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_task_runs_in_a_real_worker_and_writes_to_the_database(start_worker, settings):
    worker = start_worker(concurrency=1)
    marker = uuid.uuid4().hex
    # apply_async, not the eager path: the message goes through the real broker.
    ping_write.apply_async(args=[marker])
    assert wait_until(
        lambda: WorkerPing.objects.filter(marker=marker).exists(), timeout=60
    ), worker.log()
    assert "ready" in worker.log()


def test_a_new_dataset_version_is_matched_by_a_real_worker(
    start_worker, project, owner
):
    """The upload of version 2 sends datasets.versions_match on commit; the
    worker stores the matching with version 1 that compare then reads."""
    import json

    from django.core.files.uploadedfile import SimpleUploadedFile

    from evalsite.datasets.models import DatasetMatch
    from evalsite.datasets.services import dataset_create

    def upload(keys: list[str]) -> SimpleUploadedFile:
        rows = [{"input": f"q {k}", "output": "a", "metadata": {"id": k}} for k in keys]
        data = "\n".join(json.dumps(r) for r in rows).encode()
        return SimpleUploadedFile("qa.jsonl", data)

    worker = start_worker(concurrency=1)
    v1 = dataset_create(project=project, user=owner, file=upload(["a", "b"]), name="qa")
    v2 = dataset_create(project=project, user=owner, file=upload(["b", "c"]), name="qa")
    assert wait_until(
        lambda: DatasetMatch.objects.filter(dataset_a=v1, dataset_b=v2).count() == 2,
        timeout=60,
    ), worker.log()
    by_key = DatasetMatch.objects.get(dataset_a=v1, dataset_b=v2, rule="key:id")
    assert (by_key.matched, by_key.only_in_a, by_key.only_in_b) == (1, 1, 1)
    assert by_key.pairs.count() == 1
