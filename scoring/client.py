"""One judge step over the real ``openai`` client: structured output with fallbacks,
retries with backoff honouring Retry-After, one repair attempt, a cache, and a
``StepRecord`` of everything that happened."""

from __future__ import annotations

import contextlib
import email.utils
import math
import random
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from scoring.cache import JudgeCache, cache_key
from scoring.egress import refused_cause
from scoring.prompts import Messages, Reply, Step, repair_message, schema_instructions

RESPONSE_FORMATS = ("json_schema", "json_object", "text")

Limiter = Callable[[], AbstractContextManager[Any]]


def _zero_usage() -> dict[str, int]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@dataclass
class StepRecord:
    """What one judge step sent and received (kept on the result for reviewers)."""

    name: str
    messages: list[dict[str, Any]]
    raw: str | None = None
    usage: dict[str, int] = field(default_factory=_zero_usage)
    latency_ms: float = 0.0
    cached: bool = False
    attempts: int = 0
    response_format: str = "json_schema"
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of transient failures (429, 5xx, connection errors, timeouts).

    The wait before retry ``n`` (0-based) is ``Retry-After`` when the server sends one
    (capped at ``max_retry_after``), else ``min(base_delay × 2**n, max_delay)`` with
    jitter (a uniform factor in [0.5, 1]).
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = time.sleep

    def backoff(
        self, attempt: int, retry_after: float | None, rng: random.Random
    ) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        delay = min(self.base_delay * (2.0**attempt), self.max_delay)
        return delay * rng.uniform(0.5, 1.0)


class StepFailed(Exception):
    """A step could not be completed; carries the step record and the last raw reply."""

    def __init__(
        self, message: str, record: StepRecord, raw: str | None = None
    ) -> None:
        super().__init__(message)
        self.record = record
        self.raw = raw


class _FormatRejected(Exception):
    pass


# The response format that worked, per (base URL, model): later calls start there.
_MODES: dict[tuple[str, str], str] = {}
_MODES_LOCK = threading.Lock()


def remembered_format(base_url: str, model: str) -> str:
    with _MODES_LOCK:
        return _MODES.get((base_url, model), RESPONSE_FORMATS[0])


def _remember_format(base_url: str, model: str, mode: str) -> None:
    with _MODES_LOCK:
        _MODES[(base_url, model)] = mode


def forget_formats() -> None:
    """Forget which response formats endpoints accepted (tests)."""
    with _MODES_LOCK:
        _MODES.clear()


_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "json mode",
    "structured output",
)


def _is_format_rejection(exc: openai.APIStatusError) -> bool:
    if exc.status_code not in (400, 422, 501):
        return False
    text = str(exc.message).lower()
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error")
        params = {
            body.get("param"),
            inner.get("param") if isinstance(inner, dict) else None,
        }
        if "response_format" in params:
            return True
        text += " " + str(body).lower()
    return any(word in text for word in _FORMAT_WORDS)


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            seconds = float(value) / 1000
            return seconds if math.isfinite(seconds) else None
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error: {exc}"
    return str(exc)


def _is_transient(exc: Exception) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


class StepRunner:
    """Runs judge steps for one client/model; shared by the steps of a case (and safe to
    share between threads)."""

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        base_url: str | None = None,
        temperature: float = 0.0,
        cache: JudgeCache | None = None,
        limiter: Limiter | None = None,
        retry: RetryPolicy | None = None,
        seed: int | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.base_url = (base_url or str(client.base_url)).rstrip("/")
        self.temperature = temperature
        self.cache = cache
        self.limiter = limiter
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)

    # -- public -----------------------------------------------------------------------

    def run(self, step: Step, messages: Messages) -> tuple[Reply, StepRecord]:
        """Run one step; StepFailed when it cannot produce a valid reply."""
        start = time.perf_counter()
        record = StepRecord(name=step.name, messages=[dict(m) for m in messages])
        first = RESPONSE_FORMATS.index(remembered_format(self.base_url, self.model))
        try:
            for mode in RESPONSE_FORMATS[first:]:
                record.response_format = mode
                sent = self._messages_for(step, messages, mode)
                record.messages = sent
                params = self._params(step, mode)
                key = cache_key(self.base_url, self.model, sent, params)
                hit = self._from_cache(step, key, record)
                if hit is not None:
                    return hit, record
                try:
                    raw = self._request(sent, params, record)
                except _FormatRejected:
                    continue
                _remember_format(self.base_url, self.model, mode)
                reply = self._validate_or_repair(step, sent, params, raw, record)
                if self.cache is not None:
                    self.cache.set(
                        key,
                        {
                            "raw": record.raw,
                            "usage": dict(record.usage),
                            "response_format": mode,
                        },
                    )
                return reply, record
            raise self._fail(
                record, "the endpoint rejected every response format", None
            )
        finally:
            record.latency_ms = round((time.perf_counter() - start) * 1000, 3)

    # -- internals --------------------------------------------------------------------

    def _messages_for(
        self, step: Step, messages: Messages, mode: str
    ) -> list[dict[str, Any]]:
        sent = [dict(m) for m in messages]
        if mode != "json_schema" and sent and sent[0]["role"] == "system":
            sent[0]["content"] = sent[0]["content"] + schema_instructions(step)
        return sent

    def _params(self, step: Step, mode: str) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature}
        if mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": step.schema_name,
                    "schema": step.json_schema(),
                    "strict": True,
                },
            }
        elif mode == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    def _from_cache(self, step: Step, key: str, record: StepRecord) -> Reply | None:
        if self.cache is None:
            return None
        value = self.cache.get(key)
        if not value or not isinstance(value.get("raw"), str):
            return None
        try:
            reply = step.parse(value["raw"])
        except ValueError:
            return None
        record.raw = value["raw"]
        record.usage = {**_zero_usage(), **(value.get("usage") or {})}
        record.cached = True
        return reply

    def _fail(self, record: StepRecord, message: str, raw: str | None) -> StepFailed:
        record.error = message
        return StepFailed(f"step {record.name!r}: {message}", record, raw)

    def _validate_or_repair(
        self,
        step: Step,
        sent: list[dict[str, Any]],
        params: dict[str, Any],
        raw: str,
        record: StepRecord,
    ) -> Reply:
        try:
            return step.parse(raw)
        except ValueError as exc:
            first_error = str(exc)
        conversation = [
            *sent,
            {"role": "assistant", "content": raw},
            repair_message(first_error),
        ]
        record.messages = conversation
        raw2 = self._request(conversation, params, record)
        try:
            return step.parse(raw2)
        except ValueError as exc:
            raise self._fail(
                record,
                f"the judge's reply did not validate after one repair attempt: {exc}",
                raw2,
            ) from exc

    def _request(
        self, messages: list[dict[str, Any]], params: dict[str, Any], record: StepRecord
    ) -> str:
        policy = self.retry
        attempt = 0
        while True:
            record.attempts += 1
            try:
                response = self._send(messages, params)
                break
            except openai.APIStatusError as exc:
                if "response_format" in params and _is_format_rejection(exc):
                    raise _FormatRejected() from exc
                if not _is_transient(exc):
                    raise self._fail(record, _describe(exc), None) from exc
                error: Exception = exc
                retry_after = parse_retry_after(exc.response.headers)
            except openai.APIConnectionError as exc:
                refused = refused_cause(exc)
                if refused is not None:
                    # A policy answer, not a network fault: retrying cannot change it.
                    raise self._fail(record, str(refused), None) from exc
                error = exc
                retry_after = None
            if attempt >= policy.max_retries:
                raise self._fail(
                    record,
                    f"gave up after {attempt + 1} attempts: {_describe(error)}",
                    None,
                ) from error
            policy.sleep(policy.backoff(attempt, retry_after, self._rng))
            attempt += 1
        usage = getattr(response, "usage", None)
        if usage is not None:
            for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
                record.usage[name] = record.usage.get(name, 0) + int(
                    getattr(usage, name, 0) or 0
                )
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        raw = content if isinstance(content, str) else ""
        record.raw = raw
        return raw

    def _send(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> Any:
        """One HTTP request, inside the limiter (the wait between retries is outside)."""
        limiter = (
            self.limiter() if self.limiter is not None else contextlib.nullcontext()
        )
        # The same POST that chat.completions.create sends, minus its per-call TypedDict
        # transform of the body: that transform was a third of the client's CPU per call
        # (~1 ms of 2.5 in a profile of the run benchmark's workers), and a run's workers
        # are CPU-bound. Rechecked 23 November on a mock transport (no network):
        # 0.55-0.7 ms of CPU per call this way, 1.15-1.55 ms through the SDK.
        with limiter:
            return self.client.post(
                "/chat/completions",
                body={"model": self.model, "messages": messages, **params},
                cast_to=ChatCompletion,
            )
