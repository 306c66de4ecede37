"""The judge-call cache: an identical call (base URL, model, messages, parameters) is
never paid twice. The web app backs the protocol with its database."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class JudgeCache(Protocol):
    """Stores one validated judge reply per key: ``{"raw": str, "usage": dict, ...}``."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any]) -> None: ...


@runtime_checkable
class AsyncJudgeCache(Protocol):
    """JudgeCache for the asyncio runner (``scoring.client.AsyncStepRunner``)."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def set(self, key: str, value: dict[str, Any]) -> None: ...


def cache_key(
    base_url: str | None,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
) -> str:
    """sha256 of the canonical JSON of the call (sorted keys, no whitespace)."""
    payload = {
        "base_url": (base_url or "").rstrip("/"),
        "model": model,
        "messages": list(messages),
        "params": dict(params),
    }
    canonical = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class InMemoryCache:
    """A thread-safe in-process cache, optionally bounded (least recently used evicted)."""

    def __init__(self, max_entries: int | None = None) -> None:
        self._data: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return dict(value)

    def set(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = dict(value)
            self._data.move_to_end(key)
            if self._max is not None:
                while len(self._data) > self._max:
                    self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
