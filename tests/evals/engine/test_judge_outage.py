"""A judge that cannot be reached pauses the connection and is waited for, up to
JUDGE_OUTAGE_SECONDS; past it, results fail saying so. The fault
suite (tests/faults) does the same with a real worker; this runs the dispatcher here."""

from __future__ import annotations

import re
import socket
import time

import pytest

from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.models import JudgeConnection, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from scoring.offline_judge import start_server
from tests.evals.conftest import support_rows
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _url(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def _run(project, owner, judge, rows: int) -> Run:
    dataset = DatasetFactory(project=project, name="outage", rows=support_rows(rows))
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="F", kind="faithfulness", judge=judge
    )
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=[scorer], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    return run


def test_results_fail_once_the_judge_is_unreachable_longer_than_the_setting(
    project, owner, judge, settings, tmp_path, refusing_port
):
    settings.VAR_DIR = tmp_path
    settings.JUDGE_OUTAGE_SECONDS = 1
    url = _url(refusing_port)
    JudgeConnection.objects.filter(pk=judge.pk).update(base_url=url)
    settings.JUDGE_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    judge.refresh_from_db()
    run = _run(project, owner, judge, rows=4)
    started = time.monotonic()
    run_dispatch(run_id=run.pk)
    elapsed = time.monotonic() - started
    errors = list(Result.objects.filter(run=run).values_list("status", "error"))
    assert errors and all(status == Result.Status.ERROR for status, _ in errors)
    for _, error in errors:
        assert re.search(
            r"judge unreachable for \d+ s, longer than the 1 s allowed", error
        ), error
    assert 1 <= elapsed < 30


def test_a_short_outage_is_waited_for_and_the_run_ends_without_errors(
    project, owner, judge, settings, tmp_path, refusing_port
):
    settings.VAR_DIR = tmp_path
    settings.JUDGE_OUTAGE_SECONDS = 30
    url = _url(refusing_port)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    JudgeConnection.objects.filter(pk=judge.pk).update(base_url=url)
    judge.refresh_from_db()
    run = _run(project, owner, judge, rows=4)
    import threading

    servers = []

    def come_back() -> None:
        time.sleep(3)
        refusing_port.close()  # the judge comes back on the port it was held on
        servers.append(start_server(port=port))

    thread = threading.Thread(target=come_back)
    thread.start()
    try:
        run_dispatch(run_id=run.pk)
    finally:
        thread.join()
        for server in servers:
            server.stop()
    statuses = set(Result.objects.filter(run=run).values_list("status", flat=True))
    assert statuses == {Result.Status.OK}


def test_a_judge_stopped_with_calls_in_flight_fails_them_after_the_setting(
    project, owner, judge, settings, tmp_path
):
    import threading

    settings.VAR_DIR = tmp_path
    settings.JUDGE_OUTAGE_SECONDS = 1
    server = start_server(port=0, latency_ms=300)
    JudgeConnection.objects.filter(pk=judge.pk).update(
        base_url=server.base_url, max_concurrency=4
    )
    judge.refresh_from_db()
    run = _run(project, owner, judge, rows=12)
    started = time.monotonic()

    def stop_soon() -> None:
        deadline = time.monotonic() + 20
        while server.state.in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.stop()

    thread = threading.Thread(target=stop_soon)
    thread.start()
    try:
        run_dispatch(run_id=run.pk)
    finally:
        thread.join()
        server.stop()
    elapsed = time.monotonic() - started
    statuses = list(Result.objects.filter(run=run).values_list("status", flat=True))
    assert Result.Status.PENDING not in statuses
    assert Result.Status.ERROR in statuses
    # Past the setting every result fails at once, not one per probe of the judge
    # (a pause of up to 5 s each: a minute and a half for these 12).
    assert elapsed < 20
