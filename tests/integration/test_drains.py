"""A message the previous release queued for the old single-result task, taken by a real
worker from the real broker: the dispatcher judges its result (the name stays
registered for one release)."""

from __future__ import annotations

import pytest

from evalsite.celery import app
from evalsite.evals.models import Result
from evalsite.evals.runs import services as run_services
from evalsite.evals.runs.services import run_mark_running
from evalsite.queues import CeleryQueue
from tests.integration.conftest import wait_until
from tests.integration.test_runs import TIMEOUT, _finished, _setup

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_queued_single_result_message_is_judged_by_the_dispatcher(
    start_worker, judge_server
):
    server = judge_server(latency_ms=2)
    project, user, dataset, scorers = _setup(server, items=3, kinds=["faithfulness"])
    run = run_services.run_start(
        project=project, user=user, dataset=dataset, scorers=scorers, enqueue=False
    )
    run_mark_running(run_id=run.pk)
    result = Result.objects.filter(run=run).order_by("pk").first()
    assert result is not None
    # As the previous release sent it: by name, to the scoring queue, one result.
    app.send_task("evals.result_score", args=[result.pk], queue=CeleryQueue.SCORING)
    worker = start_worker(concurrency=1)
    assert wait_until(lambda: _finished(run), timeout=TIMEOUT), worker.log()
    result.refresh_from_db()
    assert result.status == Result.Status.OK and result.calls.exists()
    assert not Result.objects.filter(run=run).exclude(status=Result.Status.OK).exists()
    assert "evals.result_score[" in worker.log()
