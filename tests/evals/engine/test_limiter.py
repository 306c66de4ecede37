from __future__ import annotations

import multiprocessing
import threading
import time
import uuid

import pytest
from django.conf import settings

from evalsite.evals.engine.limiter import FileLimiter, RedisLimiter, judge_limiter

BACKENDS = ["file"] + (["redis"] if settings.REDIS_URL else [])


def _make(backend: str, key: str, **kw):
    if backend == "redis":
        return RedisLimiter(key=key, lease_seconds=kw.pop("lease_seconds", 30), **kw)
    kw.pop("lease_seconds", None)
    return FileLimiter(key=key, **kw)


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    best = current = 0
    for _, delta in events:
        current += delta
        best = max(best, current)
    return best


def _hold(limiter, intervals, seconds=0.03, times=4):
    for _ in range(times):
        with limiter():
            start = time.monotonic()
            time.sleep(seconds)
            intervals.append((start, time.monotonic()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_limiter_never_exceeds_max_concurrency_across_threads(backend):
    limiter = _make(
        backend, f"t-{uuid.uuid4().hex}", max_concurrency=2, requests_per_minute=0
    )
    intervals: list[tuple[float, float]] = []
    threads = [
        threading.Thread(target=_hold, args=(limiter, intervals)) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(intervals) == 24
    # Strictly after the end (>) vs before start: touching intervals do not overlap.
    assert _max_overlap(intervals) == 2


def _child(backend: str, key: str, queue) -> None:
    limiter = _make(backend, key, max_concurrency=2, requests_per_minute=0)
    intervals: list[tuple[float, float]] = []
    threads = [
        threading.Thread(target=_hold, args=(limiter, intervals)) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(intervals)


@pytest.mark.parametrize("backend", BACKENDS)
def test_limiter_holds_across_processes(backend):
    key = f"p-{uuid.uuid4().hex}"
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(backend, key, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    intervals = [iv for _ in procs for iv in queue.get(timeout=60)]
    for p in procs:
        p.join(timeout=30)
    assert len(intervals) == 36
    assert _max_overlap(intervals) <= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_limiter_spaces_requests_per_minute(backend, monkeypatch):
    """3 a minute is one start every 20 s: the second start waits, it does not spend
    the rest of the minute's requests at once."""
    limiter = _make(
        backend, f"r-{uuid.uuid4().hex}", max_concurrency=5, requests_per_minute=3
    )
    sleeps: list[float] = []

    # The next start must wait about 20 s: stop the test at the first sleep.
    class Waited(Exception):
        pass

    def fake_sleep(seconds):
        sleeps.append(seconds)
        raise Waited

    with limiter():
        pass
    slots, wait = limiter.take(1)
    assert slots == [] and 19 < wait <= 20
    monkeypatch.setattr("evalsite.evals.engine.limiter.time.sleep", fake_sleep)
    with pytest.raises(Waited), limiter():
        pass
    assert 0 < sleeps[0] <= 1.1


def test_redis_limiter_lease_expires_when_the_holder_dies():
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    limiter = RedisLimiter(
        key=f"l-{uuid.uuid4().hex}",
        max_concurrency=1,
        requests_per_minute=0,
        lease_seconds=0.3,
    )
    limiter.acquire()  # never released: its holder "died"
    started = time.monotonic()
    token = limiter.acquire()
    assert time.monotonic() - started >= 0.2
    limiter.release(token)


def test_file_limiter_slot_is_freed_when_the_holder_process_dies():
    key = f"d-{uuid.uuid4().hex}"
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()

    def hold_forever():
        limiter = FileLimiter(key=key, max_concurrency=1, requests_per_minute=0)
        with limiter():
            ready.set()
            time.sleep(60)

    proc = ctx.Process(target=hold_forever)
    proc.start()
    assert ready.wait(10)
    limiter = FileLimiter(key=key, max_concurrency=1, requests_per_minute=0)
    assert limiter._take_slot() is None
    proc.kill()
    proc.join()
    fd = limiter._take_slot()
    assert fd is not None


def test_judge_limiter_picks_the_backend_from_settings(settings):
    settings.REDIS_URL = ""
    assert isinstance(
        judge_limiter(key="x", max_concurrency=1, requests_per_minute=0), FileLimiter
    )


# --------------------------------------------------------------------------- asyncio face


def _async_child(backend: str, key: str, limits: dict, queue, coroutines: int) -> None:
    """One worker process: an event loop with many coroutines taking slots."""
    import asyncio

    async def main() -> list[tuple[float, float, float]]:
        limiter = _make(backend, key, **limits)
        held: list[tuple[float, float, float]] = []

        async def call() -> None:
            for _ in range(3):
                async with limiter.aslot():
                    start = time.monotonic()
                    await asyncio.sleep(0.02)
                    held.append((start, time.monotonic(), time.time()))

        await asyncio.wait_for(asyncio.gather(*(call() for _ in range(coroutines))), 50)
        return held

    queue.put(asyncio.run(main()))


def _in_two_processes(backend: str, limits: dict, coroutines: int) -> list:
    key = f"a-{uuid.uuid4().hex}"
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_async_child, args=(backend, key, limits, queue, coroutines))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    held = [iv for _ in procs for iv in queue.get(timeout=90)]
    for p in procs:
        p.join(timeout=30)
    return held


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_worker_processes_of_coroutines_never_exceed_max_concurrency(backend):
    held = _in_two_processes(
        backend, {"max_concurrency": 8, "requests_per_minute": 0}, coroutines=40
    )
    assert len(held) == 2 * 40 * 3
    # The limiter, not the 80 coroutines, caps what is in flight; and it is used.
    assert _max_overlap([(s, e) for s, e, _ in held]) == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_worker_processes_share_one_even_rate(backend):
    """600 a minute between two processes: starts 0.1 s apart, never a burst, and the
    rate the run page promises (10 calls/s) is what they get."""
    key = f"m-{uuid.uuid4().hex}"
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    seconds = 2.0

    def child() -> None:
        limiter = _make(backend, key, max_concurrency=50, requests_per_minute=600)
        taken = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            slots, wait = limiter.take(5)
            taken += [time.time() for _ in slots]
            for slot in slots:
                limiter.give_back(slot, succeeded=True)
            if not slots:
                assert 0 < wait <= 0.1  # until the next start is due
                time.sleep(0.005)
        queue.put(taken)

    procs = [ctx.Process(target=child) for _ in range(2)]
    for p in procs:
        p.start()
    taken = sorted(t for _ in procs for t in queue.get(timeout=30))
    for p in procs:
        p.join(timeout=10)
    # In any window of w seconds at most w / 0.1 + 1 starts (a few ms of slack for
    # the two clocks read apart from the script's), and about 10 a second overall.
    for i, start in enumerate(taken):
        within = [t for t in taken[i:] if t - start < 0.5 - 0.005]
        assert len(within) <= 5 + 1, taken
    assert 0.8 * seconds * 10 <= len(taken) <= seconds * 10 + 2


def test_a_limiter_of_a_thousand_slots_grants_a_thousand_calls_at_once():
    backend = "redis" if settings.REDIS_URL else "file"
    limiter = _make(
        backend, f"k-{uuid.uuid4().hex}", max_concurrency=1000, requests_per_minute=0
    )
    slots = []
    while len(slots) < 1000:
        taken, _ = limiter.take(1000 - len(slots))
        assert taken
        slots += taken
    assert limiter.take(1) == ([], 0.0)
    for slot in slots:
        limiter.give_back(slot, succeeded=True)
    assert len(limiter.take(10)[0]) == 10


def test_a_429_slows_every_worker_of_the_connection_down_and_success_recovers():
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    key = f"t-{uuid.uuid4().hex}"
    one = RedisLimiter(
        key=key, max_concurrency=8, requests_per_minute=0, lease_seconds=30
    )
    other = RedisLimiter(
        key=key, max_concurrency=8, requests_per_minute=0, lease_seconds=30
    )

    # A 429 with Retry-After: 0.3 pauses the whole connection, for every limiter on it.
    one.throttled(0.3)
    slots, wait = other.take(1)
    assert slots == [] and 0.1 < wait <= 0.3
    time.sleep(0.35)
    # ...and halves its ceiling: 4 of the 8 slots until calls succeed again.
    slots, _ = other.take(8)
    assert len(slots) == 4
    one.throttled(0)  # a second 429 within a second does not cut again
    assert len(other.take(8)[0]) == 0
    for slot in slots:
        other.give_back(slot, succeeded=True)  # each success adds half a slot
    assert len(one.take(8)[0]) == 6


def test_a_429_through_the_slot_is_reported_to_the_limiter():
    import httpx2
    import openai

    limiter = _make(
        "redis" if settings.REDIS_URL else "file",
        f"s-{uuid.uuid4().hex}",
        max_concurrency=4,
        requests_per_minute=0,
    )
    request = httpx2.Request("POST", "http://judge.test/v1/chat/completions")
    response = httpx2.Response(429, headers={"retry-after": "0.5"}, request=request)
    error = openai.RateLimitError("slow down", response=response, body=None)
    with pytest.raises(openai.RateLimitError), limiter():
        raise error
    slots, wait = limiter.take(1)
    assert slots == [] and 0.2 < wait <= 0.5


class _FlakyBackend(FileLimiter):
    """A file limiter whose backend calls fail `failures` times first, as Redis does
    while it restarts."""

    instant_give_back = False

    def __init__(self, failures: int, **kw):
        super().__init__(key=f"flaky-{uuid.uuid4().hex}", **kw)
        self.failures = failures
        self.give_back_failures = failures

    def take(self, count):
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("Connection refused")
        return super().take(count)

    def give_back(self, slot, *, succeeded):
        super().give_back(slot, succeeded=succeeded)
        if self.give_back_failures > 0:
            self.give_back_failures -= 1
            raise ConnectionError("Connection refused")


def test_calls_waiting_for_a_slot_get_one_once_the_backend_is_back(monkeypatch):
    """A backend away for a moment (Redis restarting) delays the waiting calls; it
    neither loses them (the pump used to die with its waiters never answered, and the
    dispatcher hung) nor fails a call that already got its reply."""
    import asyncio

    from evalsite.evals.engine import limiter as limiter_module

    monkeypatch.setattr(limiter_module, "_BACKEND_RETRY_SECONDS", 0.01)
    limiter = _FlakyBackend(failures=3, max_concurrency=2, requests_per_minute=0)
    done: list[int] = []

    async def call(n: int) -> None:
        async with limiter.aslot():
            await asyncio.sleep(0.01)
        done.append(n)

    async def scenario() -> None:
        await asyncio.wait_for(asyncio.gather(*(call(n) for n in range(5))), 10)

    asyncio.run(scenario())
    assert sorted(done) == [0, 1, 2, 3, 4]


def test_calls_waiting_for_a_slot_fail_when_the_backend_stays_away(monkeypatch):
    import asyncio

    from evalsite.evals.engine import limiter as limiter_module

    monkeypatch.setattr(limiter_module, "_BACKEND_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(limiter_module, "_BACKEND_OUTAGE_SECONDS", 0.1)
    limiter = _FlakyBackend(failures=10**6, max_concurrency=2, requests_per_minute=0)

    async def call() -> None:
        async with limiter.aslot():
            pass

    async def scenario() -> list[BaseException | None]:
        return await asyncio.wait_for(
            asyncio.gather(*(call() for _ in range(3)), return_exceptions=True), 10
        )

    outcomes = asyncio.run(scenario())
    assert all(isinstance(o, ConnectionError) for o in outcomes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_waiting_calls_are_served_by_priority_then_in_the_order_they_asked(backend):
    """The dispatcher's end game asks with each result's call number as priority: a
    result's first call goes before other results' later ones, and calls of one
    priority keep their order."""
    import asyncio

    limiter = _make(
        backend, f"p-{uuid.uuid4().hex}", max_concurrency=1, requests_per_minute=0
    )
    served: list[str] = []

    async def call(name: str, priority: int) -> None:
        async with limiter.aslot(priority=priority):
            served.append(name)
            await asyncio.sleep(0.005)

    async def scenario() -> None:
        holder = asyncio.Event()
        release = asyncio.Event()

        async def hold() -> None:
            async with limiter.aslot():
                holder.set()
                await release.wait()

        first = asyncio.create_task(hold())
        await holder.wait()
        waiting = []
        for name, priority in [("c2", 2), ("a0", 0), ("b1", 1), ("d0", 0), ("e1", 1)]:
            waiting.append(asyncio.create_task(call(name, priority)))
            await asyncio.sleep(0.002)  # each one queued before the next asks
        release.set()
        await asyncio.wait_for(asyncio.gather(first, *waiting), 10)

    asyncio.run(scenario())
    assert served == ["a0", "d0", "b1", "e1", "c2"]
