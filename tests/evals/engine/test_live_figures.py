"""Live figures and judge latency: a call's recorded latency
is the judge's own time, apart from its waits; calls in flight are what the judge
itself is working on; the run page and the judge form name the limit that binds."""

from __future__ import annotations

import asyncio
import html as html_lib
import threading
import time
from contextlib import asynccontextmanager

import pytest

from evalsite.evals.engine import livestats
from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.models import JudgeCall, JudgeConnection, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from scoring import ajudge_case, make_async_client
from tests.evals.conftest import CASES, judge_control, judge_stats, support_rows
from tests.factories import DatasetFactory

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def slow_judge(offline_judge):
    """The session's offline judge answering in 40 ms (back to 0 afterwards)."""
    judge_control(offline_judge, latency_ms=40)
    yield offline_judge
    judge_control(offline_judge, latency_ms=0)


class _SlowCache:
    """A cache that takes 150 ms to answer (never a hit)."""

    async def get(self, key):
        await asyncio.sleep(0.15)
        return None

    async def set(self, key, value):
        await asyncio.sleep(0.15)


def _slow_limiter(seconds):
    @asynccontextmanager
    async def slot():
        await asyncio.sleep(seconds)  # waiting for a slot
        yield

    return slot


def test_recorded_latency_is_the_judges_own_time_and_the_waits_are_apart(
    slow_judge,
):
    async def judge():
        client = make_async_client(slow_judge.base_url)
        try:
            return await ajudge_case(
                "faithfulness",
                CASES[0],
                None,
                client,
                model="offline-judge",
                cache=_SlowCache(),
                limiter=_slow_limiter(0.3),
            )
        finally:
            await client.close()

    result = asyncio.run(judge())
    assert result.steps
    for step in result.steps:
        # The judge answers in 40 ms; each step waited 300 ms for its slot and
        # 300 ms for the cache (read and write).
        assert 35 <= step.latency_ms < 250, step
        assert step.wait_ms >= 550, step


@pytest.mark.django_db(transaction=True)
def test_judge_time_and_calls_in_flight_agree_with_what_the_judge_saw(
    project, owner, judge, slow_judge, settings, tmp_path, monkeypatch
):
    from evalsite.evals.engine import judge_cache

    settings.VAR_DIR = tmp_path
    JudgeConnection.objects.filter(pk=judge.pk).update(
        max_concurrency=6, requests_per_minute=0
    )
    # A busy worker: every batch of cache lookups holds the event loop for 60 ms, so
    # replies the judge has sent wait to be read (as on a worker short of CPU).
    read = judge_cache.JudgeCacheBatcher._read

    async def busy_read(self, reads):
        time.sleep(0.06)
        await read(self, reads)

    monkeypatch.setattr(judge_cache.JudgeCacheBatcher, "_read", busy_read)
    dataset = DatasetFactory(project=project, name="many", rows=support_rows(40))
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="F", kind="faithfulness", judge=judge
    )
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=[scorer], enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.wait(0.2):
            samples.append(livestats.run_live(run_id=run.pk))

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    try:
        run_dispatch(run_id=run.pk)
    finally:
        stop.set()
        sampler.join()
    elapsed = time.monotonic() - started
    stats = judge_stats(slow_judge)

    calls = JudgeCall.objects.filter(result__run=run, cache_hit=False)
    recorded = sum(c.latency_ms for c in calls) / 1000
    # Every second the calls' recorded latency adds up to is a second the judge spent
    # on one of them (it reports its own time), waits for the cache and slots apart.
    assert recorded == pytest.approx(stats["busy_seconds"], rel=0.05)
    assert sum(c.wait_ms for c in calls) > 0
    # Calls in flight: never more than the judge itself had, and on average the
    # judge's own mean (its seconds per second), not 0 while calls are answered.
    busy = [s for s in samples if s.calls_per_second > 0]
    assert busy, samples
    assert max(s.in_flight for s in busy) <= stats["max_in_flight"] + 0.5
    mean_seen = sum(s.in_flight for s in busy) / len(busy)
    judge_mean = stats["busy_seconds"] / elapsed
    assert judge_mean / 2 <= mean_seen <= judge_mean * 2, (mean_seen, judge_mean)
    # The connection keeps the latency its last run saw (the judge form's estimate).
    judge.refresh_from_db()
    assert judge.observed_latency_ms == pytest.approx(
        1000 * recorded / calls.count(), rel=0.2
    )
    assert 35 <= judge.observed_latency_ms < 250


def _bound_text(html, judge_id="new"):
    import re

    match = re.search(
        rf'<p class="small rate-bound" id="rate-bound-{judge_id}"[^>]*>(.*?)</p>',
        html,
        re.S,
    )
    assert match, html
    return html_lib.unescape(" ".join(re.sub(r"<[^>]+>", "", match.group(1)).split()))


def test_the_judge_form_names_the_binding_limit_with_its_numbers(
    owner_client, project, judge
):
    from django.urls import reverse

    # 128 concurrent calls and the default 600/min, on a judge last seen at 15 ms:
    # 10 calls/s, and the requests-per-minute limit is why.
    JudgeConnection.objects.filter(pk=judge.pk).update(
        max_concurrency=128,
        requests_per_minute=600,
        observed_latency_ms=15.0,
        latency_observed_at=None,
    )
    url = reverse("evals:judge_edit", args=[project.pk, judge.pk])
    text = _bound_text(owner_client.get(url).content.decode(), judge.pk)
    assert text.startswith("at most 10.0 calls/s — the requests-per-minute limit binds")
    assert "600/min ÷ 60 = 10.0 calls/s" in text
    assert "128 concurrent ÷ 15.0 ms = 8533.3 calls/s" in text
    assert "Judge latency 15.0 ms per call, from the connection's last run" in text

    # A slow judge with few slots: concurrency binds.
    JudgeConnection.objects.filter(pk=judge.pk).update(
        max_concurrency=4, observed_latency_ms=2000.0
    )
    text = _bound_text(owner_client.get(url).content.decode(), judge.pk)
    assert text.startswith("at most 2.0 calls/s — the concurrency limit binds")
    assert "4 concurrent ÷ 2000.0 ms = 2.0 calls/s, below 600/min ÷ 60 = 10.0" in text

    # No latency yet: the rpm bound, and when concurrency would bind instead.
    JudgeConnection.objects.filter(pk=judge.pk).update(
        max_concurrency=128, observed_latency_ms=None
    )
    text = _bound_text(owner_client.get(url).content.decode(), judge.pk)
    assert "at most 10.0 calls/s from 600 requests/min" in text
    assert "longer than 12800 ms a call" in text

    # The new-judge form, with the default limits (8 concurrent, 600/min).
    text = _bound_text(
        owner_client.get(reverse("evals:judges", args=[project.pk])).content.decode()
    )
    assert "at most 10.0 calls/s from 600 requests/min" in text
    assert "8 concurrent calls binds instead" in text and "longer than 800 ms" in text


def test_the_run_page_names_the_binding_limit_from_the_runs_recent_latency(
    owner_client, project, owner, judge, dataset, scorers, settings, tmp_path
):
    from django.urls import reverse

    settings.VAR_DIR = tmp_path
    settings.REDIS_URL = ""
    JudgeConnection.objects.filter(pk=judge.pk).update(
        max_concurrency=128, requests_per_minute=600, observed_latency_ms=900.0
    )
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, started_at=run.created_at
    )
    progress = reverse("evals:run_progress", args=[project.pk, run.pk])
    # Before the run's own calls: the connection's latency (900 ms: 142.2 calls/s by
    # concurrency, so the 10 calls/s of 600/min bind).
    text = _bound_text(owner_client.get(progress, **HX).content.decode(), judge.pk)
    assert text.startswith(f"{judge.name}: at most 10.0 calls/s — the requests-per")
    assert "128 concurrent ÷ 900.0 ms = 142.2 calls/s" in text
    assert "from the connection's last run" in text

    # Two dispatchers report the judge at 25.6 s for 2 calls overall: 12.8 s a call,
    # where 128 concurrent calls give exactly 10 calls/s; a third call at 16 s
    # (3 calls, 41.6 s: 13.87 s a call) makes concurrency bind at 9.2 calls/s.
    for token, pair in (("a", [12.8, 1]), ("b", [28.8, 2])):
        livestats.publish(
            run_id=run.pk,
            token=token,
            snapshot=livestats.Snapshot(
                in_flight=1.5, calls=3, judge_latency={str(judge.pk): pair}
            ),
        )
    body = owner_client.get(progress, **HX).content.decode()
    text = _bound_text(body, judge.pk)
    assert text.startswith(f"{judge.name}: at most 9.2 calls/s — the concurrency limit")
    assert "128 concurrent ÷ 13866.7 ms = 9.2 calls/s" in text
    assert "below 600/min ÷ 60 = 10.0 calls/s" in text
    assert "from this run's calls in the last few seconds" in text
    assert "<strong>3.0</strong> calls in flight" in body

    api = owner_client.get(f"/api/runs/{run.pk}").json()["progress"]
    assert api["in_flight"] == 3.0
    (bound,) = api["judge_bounds"]
    assert bound["binding"] == "concurrency"
    assert bound["rate"] == pytest.approx(128 / 13.8667, rel=1e-3)
    assert bound["rpm_rate"] == 10.0

    # Once finished, the run went at the limits it had: today's connection limits
    # (changed here) are not shown as its bound.
    JudgeConnection.objects.filter(pk=judge.pk).update(max_concurrency=2)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.DONE, finished_at=run.created_at
    )
    assert "rate-bound" not in owner_client.get(progress, **HX).content.decode()
    assert (
        owner_client.get(f"/api/runs/{run.pk}").json()["progress"]["judge_bounds"] == []
    )


def test_exports_give_the_judges_latency_and_the_wait_apart(
    owner_client, project, dataset
):
    import csv
    import io
    import json

    from tests.exports.builders import make_run_with_score
    from tests.factories import (
        JudgeCallFactory,
        JudgeConnectionFactory,
        ScorerConfigFactory,
    )

    scorer = ScorerConfigFactory(
        project=project, judge=JudgeConnectionFactory(project=project)
    )
    run = make_run_with_score(project, dataset, [scorer])
    result = run.results.order_by("item__index").first()
    JudgeCallFactory(result=result, step="claims", latency_ms=15.0, wait_ms=1335.0)
    JudgeCallFactory(result=result, step="verdicts", latency_ms=16.5, wait_ms=20.0)

    body = b"".join(
        owner_client.get(f"/api/runs/{run.pk}/export.csv").streaming_content
    )
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    row = next(r for r in rows if r["item_id"] == str(result.item_id))
    assert float(row["latency_ms"]) == 31.5
    assert float(row["wait_ms"]) == 1355.0

    body = b"".join(
        owner_client.get(f"/api/runs/{run.pk}/export.jsonl").streaming_content
    )
    line = next(
        json.loads(x)
        for x in body.splitlines()
        if json.loads(x)["item_id"] == result.item_id
    )
    assert (line["latency_ms"], line["wait_ms"]) == (31.5, 1355.0)

    calls = owner_client.get(f"/api/results/{result.pk}").json()["calls"]
    assert [(c["latency_ms"], c["wait_ms"]) for c in calls] == [
        (15.0, 1335.0),
        (16.5, 20.0),
    ]


def test_the_run_page_says_while_the_judge_is_unreachable_and_when_results_fail(
    owner_client, project, owner, judge, dataset, scorers, settings, tmp_path
):
    import time

    from django.urls import reverse

    settings.VAR_DIR = tmp_path
    settings.REDIS_URL = ""
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, started_at=run.created_at
    )
    progress = reverse("evals:run_progress", args=[project.pk, run.pk])
    # One dispatcher has not reached the judge for 20 s, another for 5 s: the page
    # says the longer; one that answers says nothing.
    for token, since in (("a", time.time() - 20), ("b", time.time() - 5), ("c", 0)):
        livestats.publish(
            run_id=run.pk,
            token=token,
            snapshot=livestats.Snapshot(unreachable_since=since, outage_seconds=300),
        )
    body = owner_client.get(progress, **HX).content.decode()
    assert "Judge unreachable for 20 s; retrying, results fail after 5 min." in body, (
        body
    )
    api = owner_client.get(f"/api/runs/{run.pk}").json()["progress"]
    assert api["judge_unreachable_seconds"] == pytest.approx(20, abs=2)
    assert api["judge_outage_seconds"] == 300

    # The judge answers again: the dispatchers publish no outage, the page says none.
    for token in ("a", "b"):
        livestats.publish(
            run_id=run.pk,
            token=token,
            snapshot=livestats.Snapshot(outage_seconds=300),
        )
    assert (
        "run-judge-unreachable" not in owner_client.get(progress, **HX).content.decode()
    )
