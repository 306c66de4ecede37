"""Judging a run many results at a time: one worker slot keeps every call in flight
that the judge connection's limiter allows.

A dispatch task works one run for a while (conf.dispatch_seconds()), then sends itself
again to the back of the queue, so runs started later get their turn:
1. claim pending results in batches (claims.py: a conditional UPDATE, a lease kept
   fresh by a heartbeat while held, taken back by the watchdog when it stops);
2. judge each claimed result in its own coroutine with ``scoring.ajudge_case``: every
   judge request waits for a slot of the connection's shared limiter (the only cap on
   calls in flight) and first checks that the run was not cancelled; a judge that
   cannot be reached pauses the whole connection, as a 429 does, and a result fails
   only once it has been unreachable longer than JUDGE_OUTAGE_SECONDS;
3. store each result as it finishes, iff the claim still holds (claims.results_store:
   the outcomes that finish while one batch is written go together in the next);
4. publish live figures for the run page: calls in flight (the judge's own seconds
   per second of the last few, so the mean number of calls the judge itself is
   working on), calls/s, each judge's recent latency, 429s and 5xx.

The database work (claims, cache, stores) runs on a few threads beside the event loop:
the ORM is blocking, and the loop must keep serving replies meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from evalsite.core.exceptions import ApplicationError
from evalsite.evals import conf
from evalsite.evals.engine import livestats
from evalsite.evals.engine.claims import (
    Outcome,
    claim_release,
    heartbeat,
    new_claim_token,
    results_claim,
    results_claimable_at_most,
    results_store,
)
from evalsite.evals.engine.judge_cache import JudgeCacheBatcher
from evalsite.evals.engine.limiter import FileLimiter, RedisLimiter, judge_limiter
from evalsite.evals.judges.egress import judge_address_guard
from evalsite.evals.judges.messages import judge_failure_message, judge_host_port
from evalsite.evals.judges.services import judge_api_key, judge_guard
from evalsite.evals.models import JudgeConnection, Result, Run, RunScorer
from evalsite.evals.runs.services import (
    run_finish_if_complete,
    run_mark_running,
    task_send_dispatch,
)
from scoring import (
    JudgeResult,
    ScoringError,
    StepRecord,
    ajudge_case,
    make_async_client,
)
from scoring.client import OutageClock, RetryPolicy, is_unreachable
from scoring.egress import AddressGuard
from scoring.errors import JudgeError
from scoring.perturbation import perturb_case
from scoring.repeat import combine_answers

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

# A run without any judge (text kinds only) or with an unlimited judge still keeps a
# bounded number of results open per dispatcher.
_UNLIMITED_IN_FLIGHT = 256
# The most results one dispatcher holds at once (the limiter admits up to 1,000 calls
# in flight per connection; several connections in one run add up to this).
_MAX_OPEN = 2000
# Database threads beside the calling one (Postgres): claims, cache reads and writes,
# and stores of a few hundred calls a second.
_EXTRA_DB_THREADS = 3
# How often the thread serving a dispatcher's database work looks whether the event
# loop has ended, when nothing wakes it.
_SERVE_POLL_SECONDS = 0.05
_CONNECTIONS_PER_CLIENT = 8
_CLAIM_INTERVAL = 0.05
# How often a dispatcher looks whether the run's last results are within its reach.
_ENDGAME_CHECK_INTERVAL = 1.0
# After an infrastructure error (a lost database connection): how often, and how long
# apart, the dispatcher tries again to store the judge's replies and give its results
# back before it hands the error to the task's retry.
_SETTLE_ATTEMPTS = 6
_SETTLE_DELAY = 0.5
# A judge that cannot be reached pauses its whole connection (as a 429 does): first for
# this long, doubling with each unreachable call in a row, up to the cap.
_OUTAGE_PAUSE_MIN = 0.25
_OUTAGE_PAUSE_MAX = 5.0


# Errors of the infrastructure (not of the judge): the task is retried by Celery.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


class RunCancelledError(Exception):
    """The run was cancelled while this result was being judged."""


@dataclass
class DispatchOutcome:
    judged: int = 0
    errors: int = 0
    skipped: int = 0
    cancelled: bool = False
    more: bool = False  # handed the run over to the next dispatcher at its time budget


class _Abandoned(Exception):
    """A call not started because its dispatcher is failing (an infrastructure error):
    the result goes back to pending for the retry."""


class JudgeUnreachableError(ApplicationError):
    """The judge has been unreachable longer than JUDGE_OUTAGE_SECONDS: the result
    fails without another call."""


# --------------------------------------------------------------------------- per process

_lock = threading.Lock()
_limiters: dict[tuple[Any, ...], RedisLimiter | FileLimiter] = {}


@sensitive_variables("key")
def judge_client_args(
    judge: JudgeConnection, base_url: str | None = None
) -> tuple[str, str | None, AddressGuard]:
    """(URL, key, address guard) of a client for the judge.

    ``base_url`` replaces the judge's URL only for callers inside the server (the demo's
    private offline judge, which has no key): the key goes only to the judge's own URL.
    """
    if base_url is None or base_url == judge.base_url:
        return judge.base_url, judge_api_key(judge=judge), judge_guard(judge)
    parts = urlsplit(base_url)
    return base_url, None, judge_address_guard((f"{parts.hostname}:{parts.port}",))


def limiter_for(judge: JudgeConnection) -> RedisLimiter | FileLimiter:
    """The judge connection's limiter, shared by every process (one object per process)."""
    cache_key = (judge.pk, judge.max_concurrency, judge.requests_per_minute)
    with _lock:
        limiter = _limiters.get(cache_key)
        if limiter is None:
            limiter = judge_limiter(
                # The creation time keeps keys apart when ids are reused (test databases).
                key=f"judge-{judge.pk}-{int(judge.created_at.timestamp())}",
                max_concurrency=judge.max_concurrency,
                requests_per_minute=judge.requests_per_minute,
                lease_seconds=judge.timeout_seconds + 30,
            )
            _limiters[cache_key] = limiter
        return limiter


def run_status(run_id: int) -> str | None:
    """The run's status now (None when it was deleted)."""
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


def judge_model_settings(
    run_scorer: RunScorer, judge: JudgeConnection
) -> tuple[str, float]:
    """(model, temperature) a run's scorer judges with: the run's snapshot of its judge
    (the connection may have been edited since the run started)."""
    snapshot = run_scorer.judge_snapshot or {}
    model = str(snapshot.get("model") or judge.model)
    return model, float(snapshot.get("temperature", judge.temperature))


def outcome_message(
    exc: Exception,
    steps: list[StepRecord],
    *,
    result_id: int,
    judge: JudgeConnection | None = None,
) -> tuple[str, list[StepRecord]]:
    """What a result that failed with `exc` stores: its error message and the judge
    steps made so far.

    A judge's failure leads with what *Test connection* would say (the host and port,
    and whether it answered an HTTP error, timed out or was unreachable), then the
    step's own account (which step, how many attempts, the judge's one-line reason)."""
    if isinstance(exc, ScoringError):
        message = str(exc)
        if judge is not None and isinstance(exc, JudgeError):
            said = judge_failure_message(
                exc, base_url=judge.base_url, timeout_seconds=judge.timeout_seconds
            )
            lead = said or f"{judge_host_port(judge.base_url)} answered, but:"
            message = f"{lead} {message}"
        return message, list(getattr(exc, "steps", None) or [])
    if isinstance(exc, ApplicationError):
        return exc.message, steps
    logger.error("result %s: unexpected error while judging", result_id, exc_info=exc)
    return f"unexpected error: {type(exc).__name__}: {exc}", steps


@dataclass
class _Mark:
    at: float
    calls: int
    seconds: dict[int, float]
    requests: dict[int, int]


# The window of the live figures: long enough for a few publications, short enough to
# follow a judge that slows down.
_WINDOW_SECONDS = 5.0


@dataclass
class _Stats:
    """The dispatcher's calls so far: counted as they end, each with the judge's own
    seconds (``scoring.client.JudgeClock``: never the wait for a slot or the cache)."""

    calls: int = 0
    throttled: int = 0
    server_errors: int = 0
    seconds: dict[int, float] = field(default_factory=dict)  # by judge connection
    requests: dict[int, int] = field(default_factory=dict)
    recent: deque[_Mark] = field(default_factory=lambda: deque(maxlen=40))

    def judged(self, judge_id: int, seconds: float) -> None:
        """One request to the judge ended after `seconds` of the judge's own time."""
        self.seconds[judge_id] = self.seconds.get(judge_id, 0.0) + seconds
        self.requests[judge_id] = self.requests.get(judge_id, 0) + 1

    def snapshot(self) -> livestats.Snapshot:
        """The figures of the last few seconds: calls/s, calls in flight (the judge
        seconds spent per second: Little's law, so a 15 ms judge answering 40 calls/s
        has 0.6 in flight, where a glance at a counter mostly finds 0), and each judge's
        mean latency (the dispatcher's whole history when no call ended lately)."""
        now = time.monotonic()
        self.recent.append(
            _Mark(now, self.calls, dict(self.seconds), dict(self.requests))
        )
        while len(self.recent) > 1 and now - self.recent[0].at > _WINDOW_SECONDS:
            self.recent.popleft()
        first = self.recent[0]
        span = now - first.at
        latency: dict[str, list[float]] = {}
        busy = 0.0
        for judge_id, total in self.seconds.items():
            seconds = total - first.seconds.get(judge_id, 0.0)
            requests = self.requests[judge_id] - first.requests.get(judge_id, 0)
            busy += seconds
            if requests == 0:
                seconds, requests = total, self.requests[judge_id]
            latency[str(judge_id)] = [round(seconds, 6), requests]
        return livestats.Snapshot(
            in_flight=round(busy / span, 3) if span > 0 else 0.0,
            calls=self.calls,
            calls_per_second=(self.calls - first.calls) / span if span > 0 else 0.0,
            throttled=self.throttled,
            server_errors=self.server_errors,
            judge_latency=latency,
            outage_seconds=conf.judge_outage_seconds(),
        )


class _StoreBatcher:
    """Outcomes written a batch per transaction (group commit): while one batch is
    being written, the outcomes that finish meanwhile collect for the next, so a quiet
    dispatcher writes each at once and a busy one pays one transaction, and one hop
    to its database thread, for many. Storing, measured by py-spy --gil on 1,500
    embedded (SQLite) results: 14 % of the dispatcher's samples with a transaction
    and a hop per result, 11 % in batches."""

    MAX_BATCH = 200

    def __init__(self, db: Callable[..., Awaitable[Any]], token: str) -> None:
        self._db = db
        self._token = token
        self._waiting: list[tuple[Outcome, asyncio.Future[bool]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def store(self, outcome: Outcome) -> bool:
        """Whether the outcome was written (False: the claim no longer held)."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((outcome, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
        return await future

    async def _write(self) -> None:
        while self._waiting:
            batch = self._waiting[: self.MAX_BATCH]
            del self._waiting[: self.MAX_BATCH]
            try:
                written = await self._db(
                    results_store, self._token, [outcome for outcome, _ in batch]
                )
            except BaseException as exc:
                # Each waiting result gets the error (an infrastructure error fails
                # the dispatcher, which gives the results back).
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for (_, future), ok in zip(batch, written, strict=True):
                if not future.done():
                    future.set_result(ok)


class _DbWorkers:
    """The dispatcher's database work: served by the thread that called run_dispatch
    (so it shares that thread's connection, and its transaction when there is one, as
    in eager tests) and, on a database that takes concurrent writers outside a
    transaction, by a few more threads."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self.extra = (
            0
            if connection.vendor == "sqlite" or connection.in_atomic_block
            else _EXTRA_DB_THREADS
        )
        self.threads = [
            threading.Thread(target=self._serve_extra, name="dispatch-db", daemon=True)
            for _ in range(self.extra)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        self.jobs.put((future, job))
        return future

    def serve(self, until: threading.Event) -> None:
        """Run jobs on this thread until `until` is set."""
        while not until.is_set():
            try:
                item = self.jobs.get(timeout=_SERVE_POLL_SECONDS)
            except queue.Empty:
                continue
            if item is None:
                continue  # the event loop's wake-up when it ends (run_dispatch)
            self._run(*item)

    def wake_all(self) -> None:
        """The event loop has ended: a None for each extra thread, which ends it, and
        one for the serving thread, which then sees `until` set. One None alone was
        mostly taken by an extra thread (they wait longest, and the first waiter
        wakes first); the serving thread then sat in its poll past pytest's 300 s,
        three times in CI (the third with one of three extra threads gone)."""
        for _ in range(self.extra + 1):
            self.jobs.put(None)

    def _serve_extra(self) -> None:
        try:
            while (item := self.jobs.get()) is not None:
                self._run(*item)
        finally:
            connection.close()

    @staticmethod
    def _run(future: Future[Any], job: Callable[[], Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        if connection.errors_occurred and not connection.in_atomic_block:
            # A connection that failed (terminated by the server, say) is replaced
            # before the next job instead of failing every job after it.
            connection.close_if_unusable_or_obsolete()
        try:
            future.set_result(job())
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            future.set_exception(exc)

    def stop(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join(timeout=10)


class _Dispatcher:
    def __init__(
        self,
        run_id: int,
        db_workers: _DbWorkers,
        *,
        base_url: str | None = None,
        hand_over: bool = True,
    ) -> None:
        self.run_id = run_id
        self.base_url = base_url
        self.hand_over = hand_over
        self.token = new_claim_token()
        self.db_workers = db_workers
        self.outcome = DispatchOutcome()
        self.stats = _Stats()
        self.cancelled = False
        self.clients: dict[int, list[openai.AsyncOpenAI]] = {}
        self.limiters: dict[int, RedisLimiter | FileLimiter] = {}
        self.cache = JudgeCacheBatcher(self.db)
        self.stores = _StoreBatcher(self.db, self.token)
        self.next_client = 0
        # The results being judged; after an infrastructure error, the dispatcher
        # waits for every one of them (their calls in flight end, holding their
        # limiter slots until then) before it fails.
        self.open_tasks: set[asyncio.Task[None]] = set()
        self.failing = False
        # What is left of the run is within this dispatcher's capacity: see _work.
        self.endgame = False
        # Since when each judge connection could not be reached, over all this
        # dispatcher's calls to it, and its unreachable calls in a row.
        self.outages: dict[int, OutageClock] = {}
        self.unreachable_in_a_row: dict[int, int] = {}

    async def db(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        future = self.db_workers.submit(partial(fn, *args, **kwargs))
        result: _T = await asyncio.wrap_future(future)
        return result

    # -- the loop ---------------------------------------------------------------------

    async def run(self) -> DispatchOutcome:
        watcher = asyncio.create_task(self._watch())
        try:
            await self._work()
        except BaseException:
            await self._settle()
            raise
        finally:
            watcher.cancel()
            await self.cache.flush()
            await self.db(_note_latencies, self.stats.seconds, self.stats.requests)
            for clients in self.clients.values():
                for client in clients:
                    await client.close()
            await self._publish(final=True)
        return self.outcome

    async def _settle(self) -> None:
        """The dispatcher is failing (a lost database connection, mostly): start no
        more calls, let the calls in flight end (each holds its limiter slot until it
        has: releasing them earlier let the judge see 159 calls against a limit of
        128), store the replies they got in the judge cache so the retry does not pay
        for them again, and give the results still held back to pending."""
        self.failing = True
        while self.open_tasks:
            done, self.open_tasks = await asyncio.wait(self.open_tasks)
            for task in done:
                if not task.cancelled():
                    task.exception()  # retrieved: the first error is re-raised
        for attempt in range(_SETTLE_ATTEMPTS):
            try:
                await self.cache.flush()
                await self.db(claim_release, token=self.token)
                return
            except DatabaseError:
                logger.warning(
                    "run %s: could not store replies or give results back (try %d)",
                    self.run_id,
                    attempt + 1,
                    exc_info=True,
                )
                await asyncio.sleep(_SETTLE_DELAY * 2**attempt)

    async def _work(self) -> None:
        deadline = time.monotonic() + conf.dispatch_seconds()
        open_tasks = self.open_tasks
        capacity = _UNLIMITED_IN_FLIGHT
        exhausted = False
        first = True
        handed_over = False
        next_claim = 0.0
        next_endgame_check = 0.0
        while True:
            if (
                self.hand_over
                and not handed_over
                and not exhausted
                and time.monotonic() >= deadline
            ):
                # The next dispatcher starts now, while this one finishes what it
                # holds: the judge stays busy across the hand-over.
                await self.db(task_send_dispatch, self.run_id)
                handed_over = True
            stop_claiming = self.cancelled or exhausted or handed_over
            free = capacity - len(open_tasks)
            # Claim more only while few of this dispatcher's calls wait for a slot:
            # a short queue fills a slot the moment a call ends (a result between two
            # steps leaves its slot to another); a long one only holds results that
            # another dispatcher of the run may have slots for. Figures (bench_runs):
            # holding every claimable result (1,024 for 512 slots) kept the 2 s / 512
            # row at 75-81 % of the bound; no queue at all took the 100 ms / 16 row
            # from 89 % to 58 %. At most one batch per _CLAIM_INTERVAL, so new results
            # reach the limiter before the next look.
            queue_allowed = max(4, capacity // 8)
            saturated = (
                sum(limiter.waiting() for limiter in self.limiters.values())
                >= queue_allowed
            )
            now = time.monotonic()
            if (
                not stop_claiming
                and not first
                and not self.endgame
                and now >= next_endgame_check
            ):
                # The end of the run: a result's calls follow one another, so results
                # started late leave the judge's slots empty while their last calls
                # run (1 s × 128: 117, 82, 41, 7 calls in flight in the last four
                # seconds). Once what is left is within this dispatcher's capacity,
                # it is claimed without waiting for free room, and each result's
                # first call goes before other results' later ones (the longest chain
                # first): the last results start together and their later calls fill
                # the slots. bench_serve, interleaved with the code before: 1 s × 128
                # (1,000 three-call results) 88.6-89.6 % of the bound before, 92.5-
                # 93.4 % with it; 2 s × 512, 87.4-88.1 % before, 86.1-87.6 % with it.
                next_endgame_check = now + _ENDGAME_CHECK_INTERVAL
                left = await self.db(
                    results_claimable_at_most, run_id=self.run_id, limit=capacity
                )
                self.endgame = left <= capacity
            batch = max(8, capacity // 16)
            endgame_room = min(_MAX_OPEN, 2 * capacity) - len(open_tasks)
            if self.endgame:
                may_claim = not stop_claiming and now >= next_claim and endgame_room > 0
            else:
                may_claim = (
                    not stop_claiming
                    and free > 0
                    and (first or (not saturated and now >= next_claim))
                )
            if may_claim:
                if first:
                    count = max(8, capacity // conf.dispatchers_per_run())
                elif self.endgame:
                    count = min(endgame_room, batch)
                else:
                    count = min(free, batch)
                claimed = await self.db(
                    results_claim, run_id=self.run_id, token=self.token, count=count
                )
                next_claim = now + _CLAIM_INTERVAL
                if first:
                    capacity = self._capacity(claimed)
                    first = False
                exhausted = not claimed
                for result in claimed:
                    heartbeat.add(result.pk, self.token)
                    open_tasks.add(asyncio.create_task(self._judge(result)))
            if not open_tasks:
                if stop_claiming:
                    break
                await asyncio.sleep(_CLAIM_INTERVAL)
                continue
            done, _ = await asyncio.wait(
                open_tasks, timeout=_CLAIM_INTERVAL, return_when=asyncio.FIRST_COMPLETED
            )
            open_tasks -= done
            # Re-raise an infrastructure error (the task retries), each one retrieved.
            errors = [
                error
                for task in done
                if not task.cancelled() and (error := task.exception()) is not None
            ]
            if errors:
                raise errors[0]
        self.outcome.more = handed_over
        self.outcome.cancelled = self.cancelled

    def _capacity(self, claimed: list[Result]) -> int:
        """Results held at once: the sum of the run's judges' concurrency (the limiter
        keeps the calls in flight within each judge's own)."""
        judges = {
            r.run_scorer.judge.pk: r.run_scorer.judge
            for r in claimed
            if r.run_scorer.judge is not None
        }
        total = sum(j.max_concurrency or _UNLIMITED_IN_FLIGHT for j in judges.values())
        return max(1, min(_MAX_OPEN, total or _UNLIMITED_IN_FLIGHT))

    async def _watch(self) -> None:
        """Notice a cancel within half a second, and publish the live figures."""
        while True:
            status = await self.db(run_status, self.run_id)
            if status not in (Run.Status.QUEUED, Run.Status.RUNNING):
                self.cancelled = True
            await self._publish()
            await asyncio.sleep(0.5)

    async def _publish(self, *, final: bool = False) -> None:
        snapshot = self.stats.snapshot()
        downs = [d for c in self.outages.values() if (d := c.down_for()) is not None]
        if downs:
            snapshot.unreachable_since = time.time() - max(downs)
        if final:
            snapshot.in_flight = snapshot.calls_per_second = 0.0
        try:
            await asyncio.to_thread(
                livestats.publish,
                run_id=self.run_id,
                token=self.token,
                snapshot=snapshot,
            )
        except Exception:  # noqa: BLE001 - figures for a page must never stop a run
            logger.warning(
                "run %s: could not publish live figures", self.run_id, exc_info=True
            )

    # -- one result -------------------------------------------------------------------

    @asynccontextmanager
    async def _call_slot(
        self, limiter: RedisLimiter | FileLimiter, judge_id: int, calls: Iterator[int]
    ) -> AsyncIterator[None]:
        """A limiter slot for the next call of one result (`calls` counts them): in
        the run's end game, earlier calls first (see _work)."""
        step = next(calls)
        if self.cancelled:
            raise RunCancelledError(f"run {self.run_id} was cancelled")
        if self.failing:
            raise _Abandoned()
        self._check_outage(judge_id)
        async with limiter.aslot(priority=step if self.endgame else 0):
            if self.cancelled:
                raise RunCancelledError(f"run {self.run_id} was cancelled")
            if self.failing:
                raise _Abandoned()
            self._check_outage(judge_id)
            # Calls in flight are not counted here: this slot is also held while the
            # worker's event loop is too busy to read a reply the judge already sent
            # (18 "in flight" for a judge working on 3). They come from the judge's
            # own seconds per call (_Stats.judged).
            try:
                yield
            except (openai.APIStatusError, openai.APIConnectionError) as exc:
                if isinstance(exc, openai.APIStatusError):
                    if exc.status_code == 429:
                        self.stats.throttled += 1
                    elif exc.status_code >= 500:
                        self.stats.server_errors += 1
                if is_unreachable(exc):
                    await self._unreachable(limiter, judge_id)
                else:
                    self._reached(judge_id)
                raise
            else:
                self._reached(judge_id)
            finally:
                self.stats.calls += 1

    def _outage(self, judge_id: int) -> OutageClock:
        clock = self.outages.get(judge_id)
        if clock is None:
            clock = self.outages[judge_id] = OutageClock()
        return clock

    def _check_outage(self, judge_id: int) -> None:
        """Past JUDGE_OUTAGE_SECONDS of outage, results fail without calling again
        (one probe per pause would fail them one at a time)."""
        down = self._outage(judge_id).down_for()
        if down is None:
            # Reachable: the usual case, twice a call, so the setting is not read
            # (its lookup was 2.6 % of a worker's CPU on the embedded 15k run).
            return
        allowed = conf.judge_outage_seconds()
        if allowed > 0 and down >= allowed:
            raise JudgeUnreachableError(
                f"judge unreachable for {down:.0f} s, longer than the {allowed:g} s "
                "allowed (JUDGE_OUTAGE_SECONDS); not sent"
            )

    async def _unreachable(
        self, limiter: RedisLimiter | FileLimiter, judge_id: int
    ) -> None:
        """The judge could not be reached: pause the whole connection, as a 429 does,
        longer with each unreachable call in a row (the calls waiting for a slot wait
        out the pause instead of spending their retries), and note since when."""
        self._outage(judge_id).unreachable()
        in_a_row = self.unreachable_in_a_row.get(judge_id, 0)
        pause = min(_OUTAGE_PAUSE_MAX, _OUTAGE_PAUSE_MIN * 2 ** min(in_a_row, 8))
        self.unreachable_in_a_row[judge_id] = in_a_row + 1
        await asyncio.to_thread(limiter.throttled, pause)

    def _reached(self, judge_id: int) -> None:
        self._outage(judge_id).reached()
        self.unreachable_in_a_row[judge_id] = 0

    def _client(self, judge: JudgeConnection) -> openai.AsyncOpenAI:
        """One of the judge's clients, in turn.

        Several clients of at most _CONNECTIONS_PER_CLIENT calls each, not one: httpcore's
        pool looks at every connection it holds on each request and each reply (a
        poll() of each idle one), so one pool of 512 connections spent a fifth of the
        event loop's time there on the 2 s / 512 benchmark row, and pools of 32 still
        cost a fifth more worker CPU per call than pools of 8 on the embedded 15k run
        (3.8 → 3.0 ms per call)."""
        clients = self.clients.get(judge.pk)
        if clients is None:
            url, key, guard = judge_client_args(judge, self.base_url)
            count = max(1, -(-judge.max_concurrency // _CONNECTIONS_PER_CLIENT))
            clients = self.clients[judge.pk] = [
                make_async_client(url, key, judge.timeout_seconds, address_guard=guard)
                for _ in range(count)
            ]
        self.next_client += 1
        return clients[self.next_client % len(clients)]

    async def _judge(self, result: Result) -> None:
        try:
            status = await self._judge_and_store(result)
        except RunCancelledError:
            await self.db(claim_release, token=self.token, result_id=result.pk)
            status = "cancelled"
        except _Abandoned:
            status = "abandoned"  # given back by _settle
        except TRANSIENT_ERRORS:
            try:
                await self.db(claim_release, token=self.token, result_id=result.pk)
            except DatabaseError:
                logger.warning("could not release result %s", result.pk, exc_info=True)
            raise
        finally:
            heartbeat.remove(result.pk)
        if status == "ok":
            self.outcome.judged += 1
        elif status == "error":
            self.outcome.errors += 1
        elif status == "skipped":
            self.outcome.skipped += 1

    async def _judge_and_store(self, result: Result) -> str:
        run_scorer = result.run_scorer
        judge = run_scorer.judge
        steps: list[Any] = []
        answers: list[dict[str, Any]] | None = None
        uncertainty: float | None = None
        try:
            client = None
            slot = None
            model = ""
            temperature = 0.0
            if judge is not None:
                client = self._client(judge)
                limiter = self.limiters.get(judge.pk) or limiter_for(judge)
                self.limiters[judge.pk] = limiter
                slot = partial(self._call_slot, limiter, judge.pk, itertools.count())
                model, temperature = judge_model_settings(run_scorer, judge)
            case = result.item.as_case()
            if run_scorer.perturbation:
                # A bias audit's run: the same judge, on the changed copy of the item.
                case = perturb_case(run_scorer.kind, case, run_scorer.perturbation)
            judge_once = partial(
                ajudge_case,
                run_scorer.kind,
                case,
                run_scorer.options,
                client,
                model=model,
                temperature=temperature,
                cache=self.cache.for_project(result.run.project_id),
                limiter=slot,
                retry=RetryPolicy(
                    outage_seconds=conf.judge_outage_seconds(),
                    outage=self._outage(judge.pk) if judge is not None else None,
                ),
                base_url=judge.base_url if judge is not None else None,
                on_request=(
                    partial(self.stats.judged, judge.pk) if judge is not None else None
                ),
            )
            repeat = int((run_scorer.options or {}).get("repeat") or 1)
            if judge is None or repeat <= 1:
                judged = await judge_once()
            else:
                judged, answers, uncertainty = await _judge_repeatedly(
                    judge_once, repeat
                )
        except (RunCancelledError, _Abandoned, OperationalError, InterfaceError):
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure fails this result only
            message, steps = outcome_message(
                exc, steps, result_id=result.pk, judge=judge
            )
            stored = await self.stores.store(
                Outcome(result.pk, None, steps, error=message[:5000])
            )
            return "error" if stored else "skipped"
        stored = await self.stores.store(
            Outcome(
                result.pk,
                judged,
                judged.steps,
                judge_version_id=run_scorer.judge_version_id,
                answers=answers,
                uncertainty=uncertainty,
            )
        )
        return "ok" if stored else "skipped"


async def _judge_repeatedly(
    judge_once: Callable[..., Awaitable[JudgeResult]], repeat: int
) -> tuple[JudgeResult, list[dict[str, Any]], float]:
    """Ask the judge ``repeat`` times (each answer its own calls, through the same
    limiter: ``sample`` makes them distinct requests) and combine the answers
    (scoring.repeat): the majority's first answer with every answer's calls, the
    answers and the uncertainty. Any answer failing fails the result."""
    outcomes = await asyncio.gather(
        *(judge_once(sample=i) for i in range(repeat)), return_exceptions=True
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    judged_all = [o for o in outcomes if isinstance(o, JudgeResult)]
    combined = combine_answers(
        [(j.score, j.passed) for j in judged_all], [j.steps for j in judged_all]
    )
    chosen = judged_all[combined.chosen]
    kept = dataclasses.replace(chosen, passed=combined.passed, steps=combined.steps)
    return kept, [a.to_dict() for a in combined.answers], combined.uncertainty


def _note_latencies(seconds: dict[int, float], requests: dict[int, int]) -> None:
    """Keep on each judge connection the mean latency this dispatcher saw (the run
    page and the judge form name the binding limit from it before a run's own
    figures arrive)."""
    now = timezone.now()
    for judge_id, total in seconds.items():
        if requests.get(judge_id):
            JudgeConnection.objects.filter(pk=judge_id).update(
                observed_latency_ms=round(1000 * total / requests[judge_id], 3),
                latency_observed_at=now,
            )


def run_dispatch(
    *, run_id: int, base_url: str | None = None, hand_over: bool = True
) -> DispatchOutcome:
    """Judge the run's pending results for up to conf.dispatch_seconds(), many at a
    time; send the next dispatch when results are left, finish the run when none are.

    Without `hand_over`, judge until nothing is left to claim and send no message (a
    run judged in-process, see run_dispatch_here). `base_url` overrides the judges' URL
    for the calls (the demo's private offline judge); cache keys keep the configured
    URL, so later runs reuse the replies."""
    if run_status(run_id) != Run.Status.RUNNING:
        return DispatchOutcome()
    db_workers = _DbWorkers()
    dispatcher = _Dispatcher(run_id, db_workers, base_url=base_url, hand_over=hand_over)
    finished = threading.Event()
    outcomes: list[DispatchOutcome] = []
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            outcomes.append(asyncio.run(dispatcher.run()))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            errors.append(exc)
        finally:
            finished.set()
            db_workers.wake_all()

    # The event loop runs on a thread of its own; this thread serves its database work.
    loop_thread = threading.Thread(target=loop, name=f"dispatch-run-{run_id}")
    loop_thread.start()
    try:
        db_workers.serve(until=finished)
    finally:
        loop_thread.join()
        db_workers.stop()
    if errors:
        raise errors[0]
    outcome = outcomes[0]
    # Every dispatcher checks when it ends, even one that handed over: the next one
    # may have found nothing left to claim and ended before this one's last result.
    run_finish_if_complete(run_id=run_id)
    return outcome


def run_dispatch_here(*, run_id: int, base_url: str | None = None) -> DispatchOutcome:
    """Start a queued run and judge it to the end in this process, through the broker
    never: the demo loader does this before any worker is up (`make run`)."""
    run_mark_running(run_id=run_id)
    return run_dispatch(run_id=run_id, base_url=base_url, hand_over=False)


def result_dispatch(*, result_id: int) -> DispatchOutcome:
    """Judge a result, given by id, through a dispatcher of its run (which judges the
    run's other pending results too); nothing when the result is not pending."""
    run_id = (
        Result.objects.filter(pk=result_id, status=Result.Status.PENDING)
        .values_list("run_id", flat=True)
        .first()
    )
    if run_id is None:
        return DispatchOutcome()
    return run_dispatch(run_id=run_id)
