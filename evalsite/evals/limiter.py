"""A limiter shared by every worker process: at most `max_concurrency` requests in flight
to one judge connection and at most `requests_per_minute` started per clock minute.

Two backends with the same semantics:
- Redis (when REDIS_URL is set): a sorted set of leases (member = token, score = expiry),
  so a slot held by a killed worker frees itself when its lease expires, and a per-minute
  counter key; both checked and taken atomically in one Lua script. A release pushes a
  wake-up token so a waiter retries at once instead of on its next poll.
- Files (the embedded SQLite/filesystem mode, one machine): one lock file per slot held
  with flock, which the kernel releases when a process dies, and a per-minute counter
  file updated under its own flock.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings

Limiter = Callable[[], AbstractContextManager[Any]]

# How long a waiter sleeps between attempts (seconds): short, because a judge call of
# ~100 ms should not wait another 100 ms for a free slot.
_POLL_MIN = 0.002
_POLL_MAX = 0.02


def judge_limiter(
    *,
    key: str,
    max_concurrency: int,
    requests_per_minute: int,
    lease_seconds: float = 120.0,
) -> Limiter:
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
    time.sleep(min(_POLL_MAX, _POLL_MIN * (1.5**attempt)) * random.uniform(0.5, 1.0))


# --------------------------------------------------------------------------- Redis

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local limit = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then
  return {0, 0}
end
if rpm > 0 then
  local minute = math.floor(now / 60)
  local ckey = KEYS[2] .. ':' .. minute
  local used = tonumber(redis.call('GET', ckey) or '0')
  if used >= rpm then
    return {-1, math.ceil(((minute + 1) * 60 - now) * 1000)}
  end
  redis.call('INCR', ckey)
  redis.call('EXPIRE', ckey, 120)
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[4])
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 60)
return {1, 0}
"""

_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], '1')
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[2], 60)
return 1
"""

_redis_lock = threading.Lock()
_redis_clients: dict[str, Any] = {}


def _redis() -> Any:
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    url = settings.REDIS_URL
    with _redis_lock:
        client = _redis_clients.get(url)
        if client is None:
            # A restarting Redis (seconds) makes judge calls wait, not fail: the
            # commands are retried with backoff for about half a minute.
            client = redis.Redis.from_url(
                url,
                socket_timeout=10,
                retry=Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=20),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
            _redis_clients[url] = client
        return client


class RedisLimiter:
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
        client = _redis()
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._client = client

    def acquire(self) -> str:
        token = uuid.uuid4().hex
        attempt = 0
        while True:
            ok, wait_ms = self._acquire(
                keys=[self.leases_key, self.rpm_key],
                args=[
                    self.max_concurrency,
                    self.requests_per_minute,
                    self.lease_seconds,
                    token,
                ],
            )
            if ok == 1:
                return token
            if ok == -1:
                # Out of requests for this minute: sleep towards the next window.
                time.sleep(min(int(wait_ms) / 1000, 1.0) + random.uniform(0, 0.05))
                continue
            # All slots busy: wait for a release (or a short timeout, in case a lease
            # expired without one).
            self._client.blpop([self.wake_key], timeout=0.05 if attempt < 50 else 0.2)
            attempt += 1

    def release(self, token: str) -> None:
        self._release(
            keys=[self.leases_key, self.wake_key],
            args=[token, max(self.max_concurrency, 1)],
        )

    @contextmanager
    def _slot(self) -> Iterator[None]:
        token = self.acquire()
        try:
            yield
        finally:
            self.release(token)

    def __call__(self) -> AbstractContextManager[None]:
        return self._slot()


# --------------------------------------------------------------------------- files


def _limiter_dir(key: str) -> Path:
    path = Path(settings.VAR_DIR) / "limiter" / key
    path.mkdir(parents=True, exist_ok=True)
    return path


class FileLimiter:
    def __init__(self, *, key: str, max_concurrency: int, requests_per_minute: int):
        self.max_concurrency = max(0, int(max_concurrency))
        self.requests_per_minute = max(0, int(requests_per_minute))
        self.dir = _limiter_dir(key)

    def _take_slot(self) -> int | None:
        """An fd holding an exclusive flock on one free slot file, or None."""
        slots = list(range(self.max_concurrency))
        random.shuffle(slots)
        for slot in slots:
            fd = os.open(self.dir / f"slot-{slot}", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None

    def _take_rate(self) -> float:
        """Count one request in this minute; 0 when allowed, else seconds to wait."""
        if self.requests_per_minute <= 0:
            return 0.0
        fd = os.open(self.dir / "rpm", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = time.time()
            minute = int(now // 60)
            raw = os.pread(fd, 64, 0).decode("ascii", "replace").split()
            window, used = (int(raw[0]), int(raw[1])) if len(raw) == 2 else (-1, 0)
            if window != minute:
                window, used = minute, 0
            if used >= self.requests_per_minute:
                return (minute + 1) * 60 - now
            data = f"{window} {used + 1}".ljust(40).encode("ascii")
            os.pwrite(fd, data, 0)
            return 0.0
        finally:
            os.close(fd)  # closing the fd drops its flock

    @contextmanager
    def _slot(self) -> Iterator[None]:
        fd: int | None = None
        attempt = 0
        while True:
            if self.max_concurrency > 0:
                fd = self._take_slot()
                if fd is None:
                    _sleep(attempt)
                    attempt += 1
                    continue
            wait = self._take_rate()
            if wait <= 0:
                break
            # Give the slot back while waiting for the next minute.
            if fd is not None:
                os.close(fd)
                fd = None
            time.sleep(min(wait, 1.0) + random.uniform(0, 0.05))
        try:
            yield
        finally:
            if fd is not None:
                os.close(fd)

    def __call__(self) -> AbstractContextManager[None]:
        return self._slot()
