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
