"""A limiter shared by every worker process on every machine: at most `max_concurrency`
requests in flight to one judge connection, at most `requests_per_minute` started a
minute, spaced evenly, and a shared slow-down when the judge answers 429.

The per-minute limit is a GCRA (the "virtual scheduling" form of a token bucket): each
start pushes a theoretical arrival time on by 60/rpm seconds, and a start is allowed
once that time is within a tenth of a second's worth of starts of now. A clock-minute
counter let a run start a whole minute's requests in its first seconds and then sit
idle for the rest of the minute: on the run page 31 calls/s, then 0 for 50 s, under a
bound of "at most 2.0 calls/s" (120/min, browser walk of 27 November). Spaced starts
run at the bound the page shows, and do not meet a hosted judge's own limit (OpenAI
enforces its per-minute limits over shorter windows) as one burst.

Two backends with the same semantics:
- Redis (when REDIS_URL is set): a sorted set of leases (member = token, score = expiry),
  so a slot held by a killed worker frees itself when its lease expires, and the rate's
  theoretical arrival time; checked and taken atomically in one Lua script, several
  slots at a time.
  A release pushes a wake-up token so a waiter retries at once instead of on its next
  poll.
- Files (the embedded SQLite/filesystem mode, one machine): one lock file per slot held
  with flock, which the kernel releases when a process dies, and the theoretical arrival
  time in a file updated under its own flock.

A 429 slows the whole connection down, not only the call that got it (AIMD, as TCP
does): the connection pauses until the reply's Retry-After, and (Redis) its concurrency
ceiling halves, at most once a second; each call that succeeds then raises the ceiling
by half a slot, so it doubles back within a few round trips.

Each limiter has a blocking face (`with limiter():`, for threads) and an asyncio face
(`async with limiter.aslot():`). In one event loop a single pump takes slots for all
the loop's waiters in one script call, so a thousand waiting coroutines cost one Redis
round trip per release, not a thousand polls; it serves them by priority, then in the
order they asked (the dispatcher's end game puts a result's first call before other
results' later ones).
"""

from __future__ import annotations

import asyncio
import fcntl
import heapq
import itertools
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
)
from pathlib import Path
from typing import Any

import openai
from django.conf import settings

from scoring.client import parse_retry_after

logger = logging.getLogger(__name__)

# How long a waiter sleeps between attempts (seconds): short, because a judge call of
# ~100 ms should not wait another 100 ms for a free slot.
_POLL_MIN = 0.002
_POLL_MAX = 0.02
# The longest pause one 429's Retry-After imposes on the connection.
_MAX_PAUSE = 60.0
# A backend that cannot be reached (Redis restarting): the pump tries again this often,
# for this long, before it fails the calls waiting for a slot.
_BACKEND_RETRY_SECONDS = 0.5
_BACKEND_OUTAGE_SECONDS = 30.0


def judge_limiter(
    *,
    key: str,
    max_concurrency: int,
    requests_per_minute: int,
    lease_seconds: float = 120.0,
) -> RedisLimiter | FileLimiter:
    """The shared limiter for one judge connection; 0 means "no limit" for either knob.

    `lease_seconds` must exceed the longest single request (the judge's timeout).
    """
    if getattr(settings, "REDIS_URL", ""):
        return RedisLimiter(
            key=key,
            max_concurrency=max_concurrency,
            requests_per_minute=requests_per_minute,
            lease_seconds=lease_seconds,
        )
    return FileLimiter(
        key=key,
        max_concurrency=max_concurrency,
        requests_per_minute=requests_per_minute,
    )


def _sleep(attempt: int) -> None:
    time.sleep(_poll_delay(attempt))


def _poll_delay(attempt: int) -> float:
    return min(_POLL_MAX, _POLL_MIN * (1.5**attempt)) * random.uniform(0.5, 1.0)


def throttle_of(exc: BaseException) -> float | None:
    """For a 429 from the judge, the pause it asks for (0 without Retry-After); else
    None."""
    if isinstance(exc, openai.APIStatusError) and exc.status_code == 429:
        return min(parse_retry_after(exc.response.headers) or 0.0, _MAX_PAUSE)
    return None


class _Slots:
    """What a backend does; the blocking and asyncio faces are built on these."""

    # give_back never blocks (no network, no lock wait): the event loop may call it.
    instant_give_back = False

    def take(self, count: int) -> tuple[list[Any], float]:
        """Up to `count` slots now, and when none: seconds to wait before trying again
        (0 = until a release)."""
        raise NotImplementedError

    def give_back(self, slot: Any, *, succeeded: bool) -> None:
        raise NotImplementedError

    def throttled(self, pause: float) -> None:
        raise NotImplementedError


class _Faces(_Slots):
    """The blocking face (`with limiter():`) and the asyncio face (`limiter.aslot()`)."""

    _pumps: dict[asyncio.AbstractEventLoop, _Pump]

    def wait_for_release(self, timeout: float) -> None:
        time.sleep(min(timeout, _POLL_MAX))

    def take_one(self) -> Any:
        """One slot, waiting (blocking) until there is one."""
        attempt = 0
        while True:
            slots, wait = self.take(1)
            if slots:
                return slots[0]
            if wait > 0:
                time.sleep(min(wait, 1.0) + random.uniform(0, 0.05))
            else:
                self.wait_for_release(_poll_delay(attempt) if attempt < 50 else 0.2)
            attempt += 1

    @contextmanager
    def _slot(self) -> Iterator[None]:
        slot = self.take_one()
        succeeded = False
        try:
            yield
            succeeded = True
        except BaseException as exc:
            pause = throttle_of(exc)
            if pause is not None:
                self.throttled(pause)
            raise
        finally:
            self.give_back(slot, succeeded=succeeded)

    def __call__(self) -> AbstractContextManager[None]:
        return self._slot()

    @asynccontextmanager
    async def _aslot(self, priority: int) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        pump = self._pumps.get(loop)
        if pump is None:
            pump = self._pumps[loop] = _Pump(self)
        slot = await pump.acquire(priority)
        succeeded = False
        try:
            yield
            succeeded = True
        except BaseException as exc:
            pause = throttle_of(exc)
            if pause is not None:
                await asyncio.to_thread(self.throttled, pause)
            raise
        finally:
            await pump.release(slot, succeeded=succeeded)

    def aslot(self, *, priority: int = 0) -> AbstractAsyncContextManager[None]:
        """A slot; of this event loop's waiters, the lowest priority is served first,
        then the first to ask."""
        return self._aslot(priority)

    def waiting(self) -> int:
        """Coroutines of the running event loop waiting for a slot."""
        pump = self._pumps.get(asyncio.get_running_loop())
        return len(pump.waiters) if pump is not None else 0


class _Pump:
    """Takes slots for one event loop's waiters, in order (priority, then arrival),
    several per backend call.

    The backend calls are blocking (redis-py, flock) and quick; they run in a thread of
    their own so the loop keeps serving replies meanwhile."""

    def __init__(self, slots: _Faces) -> None:
        self.slots = slots
        # A heap of (priority, arrival, future).
        self.waiters: list[tuple[int, int, asyncio.Future[Any]]] = []
        self._arrivals = itertools.count()
        self.task: asyncio.Task[None] | None = None

    async def acquire(self, priority: int = 0) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        heapq.heappush(self.waiters, (priority, next(self._arrivals), future))
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run())
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                await self.release(future.result(), succeeded=False)
            raise

    async def release(self, slot: Any, *, succeeded: bool) -> None:
        if self.slots.instant_give_back:
            # Closing a lock file's descriptor: the hop to a thread cost more than the
            # close (to_thread was a tenth of the worker's CPU on the embedded run).
            self.slots.give_back(slot, succeeded=succeeded)
            return
        try:
            await asyncio.to_thread(self.slots.give_back, slot, succeeded=succeeded)
        except Exception:  # noqa: BLE001 - the call itself is done; its lease expires
            # Redis away for a moment: the slot's lease frees it when it expires,
            # and the judge's reply the call got must not be lost for it.
            logger.warning("could not give a limiter slot back", exc_info=True)

    def _fail_waiters(self, exc: BaseException) -> None:
        while self.waiters:
            future = heapq.heappop(self.waiters)[2]
            if not future.done():
                future.set_exception(exc)

    def _drop_cancelled(self) -> None:
        while self.waiters and self.waiters[0][2].done():
            heapq.heappop(self.waiters)

    async def _run(self) -> None:
        attempt = 0
        down_since: float | None = None
        while self.waiters:
            self._drop_cancelled()
            if not self.waiters:
                return
            try:
                taken, wait = await asyncio.to_thread(
                    self.slots.take, len(self.waiters)
                )
            except Exception as exc:  # noqa: BLE001 - handed to the waiters in the end
                # The backend is away (Redis restarting). The pump used to die here
                # with its waiters never answered: the dispatcher hung, its heartbeat
                # kept the leases fresh, and the run never finished (the fault test
                # of a broker restart, once in CI). Try again for a while, then fail
                # the waiting calls, which fail their results as any call error does.
                now = time.monotonic()
                down_since = now if down_since is None else down_since
                if now - down_since > _BACKEND_OUTAGE_SECONDS:
                    self._fail_waiters(exc)
                    return
                logger.warning("limiter backend unavailable; retrying", exc_info=True)
                await asyncio.sleep(_BACKEND_RETRY_SECONDS)
                continue
            down_since = None
            for slot in taken:
                self._drop_cancelled()
                if self.waiters:
                    heapq.heappop(self.waiters)[2].set_result(slot)
                else:
                    await self.release(slot, succeeded=False)
            if taken:
                attempt = 0
                continue
            if wait > 0:
                await asyncio.sleep(min(wait, 1.0) + random.uniform(0, 0.05))
            else:
                timeout = _poll_delay(attempt) if attempt < 50 else 0.2
                try:
                    await asyncio.to_thread(self.slots.wait_for_release, timeout)
                except Exception:  # noqa: BLE001 - the next take says whether it is back
                    await asyncio.sleep(timeout)
            attempt += 1


# --------------------------------------------------------------------------- Redis

# KEYS: leases, rpm counter prefix, ceiling, pause. ARGV: limit, rpm, lease, tokens...
# Returns {granted, wait_ms}: the first `granted` tokens hold slots; with none granted,
# wait_ms > 0 says how long (paused, or until the rate allows the next start), 0 = until
# a release.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local limit = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local wanted = #ARGV - 3
local pause = tonumber(redis.call('GET', KEYS[4]) or '0')
if now < pause then
  return {0, math.ceil((pause - now) * 1000)}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local free = wanted
local ceiling = tonumber(redis.call('GET', KEYS[3]) or '0')
local cap = limit
if ceiling > 0 and (cap == 0 or ceiling < cap) then
  cap = math.max(1, math.floor(ceiling))
end
if cap > 0 then
  free = math.min(wanted, cap - redis.call('ZCARD', KEYS[1]))
end
if free <= 0 then
  return {0, 0}
end
if rpm > 0 then
  local interval = 60 / rpm
  local tolerance = (math.max(1, math.ceil(rpm / 600)) - 1) * interval
  local tkey = KEYS[2] .. ':tat'
  local base = math.max(tonumber(redis.call('GET', tkey) or '0'), now)
  local allowed = math.floor((now + tolerance - base) / interval) + 1
  if allowed <= 0 then
    return {0, math.max(1, math.ceil((base - tolerance - now) * 1000))}
  end
  free = math.min(free, allowed)
  local tat = base + free * interval
  redis.call('SET', tkey, string.format('%.6f', tat), 'PX', math.ceil((tat - now) * 1000) + 60000)
end
for i = 1, free do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[3 + i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 60)
return {free, 0}
"""

# KEYS: leases, wake, ceiling. ARGV: token, wake list cap, succeeded (1/0), limit.
_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], '1')
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[2], 60)
if ARGV[3] == '1' then
  local ceiling = tonumber(redis.call('GET', KEYS[3]) or '0')
  if ceiling > 0 then
    local limit = tonumber(ARGV[4])
    ceiling = ceiling + 0.5
    if (limit > 0 and ceiling >= limit) or ceiling >= 100000 then
      redis.call('DEL', KEYS[3])
    else
      redis.call('SET', KEYS[3], ceiling, 'EX', 3600)
    end
  end
end
return 1
"""

# KEYS: leases, ceiling, pause, last cut. ARGV: limit, pause seconds.
_THROTTLE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local limit = tonumber(ARGV[1])
local pause = tonumber(ARGV[2])
if pause > 0 then
  local until_ = tonumber(redis.call('GET', KEYS[3]) or '0')
  if now + pause > until_ then
    redis.call('SET', KEYS[3], now + pause, 'PX', math.ceil(pause * 1000) + 1000)
  end
end
local last = tonumber(redis.call('GET', KEYS[4]) or '0')
if now - last < 1 then
  return 0
end
local ceiling = tonumber(redis.call('GET', KEYS[2]) or '0')
if ceiling <= 0 then
  ceiling = limit
  if ceiling <= 0 then
    ceiling = math.max(1, redis.call('ZCARD', KEYS[1]))
  end
end
redis.call('SET', KEYS[2], math.max(1, math.floor(ceiling / 2)), 'EX', 3600)
redis.call('SET', KEYS[4], now, 'EX', 60)
return 1
"""

_redis_lock = threading.Lock()
_redis_clients: dict[str, Any] = {}


def redis_client() -> Any:
    """The process's client of REDIS_URL (limiters and live run figures)."""
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    url = settings.REDIS_URL
    with _redis_lock:
        client = _redis_clients.get(url)
        if client is None:
            # A restarting Redis (seconds) makes judge calls wait, not fail: the
            # commands are retried with backoff for about half a minute. The pool is
            # sized for a pump's thread and the releases of a thousand calls.
            client = redis.Redis.from_url(
                url,
                socket_timeout=10,
                retry=Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=20),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
                max_connections=1000,
            )
            _redis_clients[url] = client
        return client


class RedisLimiter(_Faces):
    def __init__(
        self,
        *,
        key: str,
        max_concurrency: int,
        requests_per_minute: int,
        lease_seconds: float,
    ) -> None:
        self.max_concurrency = max(0, int(max_concurrency))
        self.requests_per_minute = max(0, int(requests_per_minute))
        self.lease_seconds = lease_seconds
        base = f"evalsite:limiter:{key}"
        self.leases_key = f"{base}:leases"
        self.rpm_key = f"{base}:rpm"
        self.wake_key = f"{base}:wake"
        self.ceiling_key = f"{base}:ceiling"
        self.pause_key = f"{base}:pause"
        self.cut_key = f"{base}:cut"
        client = redis_client()
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._throttle = client.register_script(_THROTTLE)
        self._client = client
        self._pumps = {}

    def take(self, count: int) -> tuple[list[Any], float]:
        tokens = [uuid.uuid4().hex for _ in range(count)]
        granted, wait_ms = self._acquire(
            keys=[self.leases_key, self.rpm_key, self.ceiling_key, self.pause_key],
            args=[
                self.max_concurrency,
                self.requests_per_minute,
                self.lease_seconds,
                *tokens,
            ],
        )
        return tokens[: int(granted)], int(wait_ms) / 1000

    def give_back(self, slot: Any, *, succeeded: bool) -> None:
        self._release(
            keys=[self.leases_key, self.wake_key, self.ceiling_key],
            args=[
                slot,
                max(self.max_concurrency, 1),
                1 if succeeded else 0,
                self.max_concurrency,
            ],
        )

    def wait_for_release(self, timeout: float) -> None:
        self._client.blpop([self.wake_key], timeout=max(timeout, 0.01))

    def throttled(self, pause: float) -> None:
        self._throttle(
            keys=[self.leases_key, self.ceiling_key, self.pause_key, self.cut_key],
            args=[self.max_concurrency, pause],
        )

    def acquire(self) -> str:
        return str(self.take_one())

    def release(self, token: str) -> None:
        self.give_back(token, succeeded=False)


# --------------------------------------------------------------------------- files


def _limiter_dir(key: str) -> Path:
    path = Path(settings.VAR_DIR) / "limiter" / key
    path.mkdir(parents=True, exist_ok=True)
    return path


class FileLimiter(_Faces):
    instant_give_back = True

    def __init__(self, *, key: str, max_concurrency: int, requests_per_minute: int):
        self.max_concurrency = max(0, int(max_concurrency))
        self.requests_per_minute = max(0, int(requests_per_minute))
        self.dir = _limiter_dir(key)
        self._pumps = {}
        # Slots this process holds: not worth an open() to find them taken.
        self._held: set[int] = set()
        self._held_lock = threading.Lock()

    def _take_slot(self) -> tuple[int, int] | None:
        """(slot, fd holding an exclusive flock on that free slot file), or None."""
        with self._held_lock:
            slots = [s for s in range(self.max_concurrency) if s not in self._held]
        random.shuffle(slots)
        for slot in slots:
            fd = os.open(self.dir / f"slot-{slot}", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            with self._held_lock:
                self._held.add(slot)
            return slot, fd
        return None

    def _free_slot(self, held: tuple[int, int] | None) -> None:
        if held is None:
            return
        slot, fd = held
        os.close(fd)  # closing the fd drops its flock
        with self._held_lock:
            self._held.discard(slot)

    def _paused_for(self) -> float:
        try:
            until = float((self.dir / "pause").read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0.0
        return max(0.0, until - time.time())

    def _take_rate(self) -> float:
        """Start one request under the rate (GCRA, as the Redis script does): 0 when
        allowed, else seconds until it is."""
        if self.requests_per_minute <= 0:
            return 0.0
        interval = 60 / self.requests_per_minute
        tolerance = (max(1, -(-self.requests_per_minute // 600)) - 1) * interval
        fd = os.open(self.dir / "rate", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = time.time()
            raw = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            try:
                arrival = float(raw)
            except ValueError:
                arrival = 0.0
            base = max(arrival, now)
            if base - tolerance > now:
                return base - tolerance - now
            os.pwrite(fd, f"{base + interval:.6f}".ljust(40).encode("ascii"), 0)
            return 0.0
        finally:
            os.close(fd)

    def take(self, count: int) -> tuple[list[Any], float]:
        paused = self._paused_for()
        if paused > 0:
            return [], paused
        taken: list[Any] = []
        for _ in range(count):
            held = self._take_slot() if self.max_concurrency > 0 else None
            if self.max_concurrency > 0 and held is None:
                break
            wait = self._take_rate()
            if wait > 0:
                # Give the slot back while waiting for the rate to allow a start.
                self._free_slot(held)
                return taken, (0.0 if taken else wait)
            taken.append(held)
        return taken, 0.0

    def give_back(self, slot: Any, *, succeeded: bool) -> None:
        self._free_slot(slot)

    def throttled(self, pause: float) -> None:
        if pause > self._paused_for():
            (self.dir / "pause").write_text(str(time.time() + pause))
