"""One judge step over the real ``openai`` client: structured output with fallbacks,
retries with backoff honouring Retry-After, one repair attempt, a cache, and a
``StepRecord`` of everything that happened."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, TypeVar, cast

import openai
from openai.types.chat import ChatCompletion

from scoring.cache import AsyncJudgeCache, JudgeCache, cache_key
from scoring.egress import refused_cause
from scoring.prompts import Messages, Reply, Step, repair_message, schema_instructions
from scoring.redact import body_reason, body_text, redact_secrets, short_reason

RESPONSE_FORMATS = ("json_schema", "json_object", "text")

Limiter = Callable[[], AbstractContextManager[Any]]
AsyncLimiter = Callable[[], AbstractAsyncContextManager[Any]]
_T = TypeVar("_T")


def _zero_usage() -> dict[str, int]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@dataclass
class StepRecord:
    """What one judge step sent and received (kept on the result for reviewers)."""

    name: str
    messages: list[dict[str, Any]]
    raw: str | None = None
    usage: dict[str, int] = field(default_factory=_zero_usage)
    # The judge's own time: its requests from sent to answered, every attempt and the
    # repair included. ``wait_ms`` is the rest of the step's time: waiting for a
    # limiter slot, for the cache, and the back-off between retries.
    latency_ms: float = 0.0
    wait_ms: float = 0.0
    cached: bool = False
    attempts: int = 0
    response_format: str = "json_schema"
    # A short reason anyone who may read the result may see ("HTTP 401 from the judge:
    # invalid api key"), and apart the judge's full reply to a failed request, secrets
    # redacted, for the project's owners only (a judge may echo the key).
    error: str | None = None
    error_body: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class OutageClock:
    """Since when a judge has been unreachable, shared by every call to it (a caller
    with many calls in flight notes each one's outcome): a step then fails once the
    judge has been down longer than the policy allows, not once each step has."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.since: float | None = None

    def unreachable(self) -> None:
        if self.since is None:
            self.since = self._clock()

    def reached(self) -> None:
        self.since = None

    def down_for(self) -> float | None:
        """Seconds the judge has been unreachable, None when it answered last."""
        return None if self.since is None else self._clock() - self.since


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of transient failures (429, 5xx, connection errors, timeouts).

    The wait before retry ``n`` (0-based) is ``Retry-After`` when the server sends one
    (capped at ``max_retry_after``), else ``min(base_delay × 2**n, max_delay)`` with
    jitter (a uniform factor in [0.5, 1]).

    With ``outage_seconds`` > 0, a judge that cannot be reached (``is_unreachable``)
    is not a failure that uses up ``max_retries``: the step tries again, waits growing
    to ``max_outage_delay``, until the judge has been unreachable (for this step) longer
    than ``outage_seconds``; only then does it fail, saying so.
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    outage_seconds: float = 0.0
    max_outage_delay: float = 5.0
    clock: Callable[[], float] = time.monotonic
    # The judge's outage as its caller sees it over all calls (else each step's own).
    outage: OutageClock | None = None

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


def _describe(exc: Exception, secrets: tuple[str, ...] = ()) -> str:
    """A short reason for a failed request: the status and the remote's own one-line
    message (never its whole body), secrets redacted."""
    if isinstance(exc, openai.APIStatusError):
        said = body_reason(exc.body) or _response_text(exc) or str(exc.message)
        reason = short_reason(redact_secrets(said, secrets=secrets))
        return f"HTTP {exc.status_code} from the judge: {reason or 'no message'}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return short_reason(redact_secrets(f"connection error: {exc}", secrets=secrets))
    return short_reason(redact_secrets(str(exc), secrets=secrets))


def _response_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # noqa: BLE001 - a streamed or closed response has no text to give
        return ""


def _error_body(exc: Exception, secrets: tuple[str, ...]) -> str | None:
    """The judge's whole reply to a failed request (bounded, secrets redacted)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    text = body_text(None, _response_text(exc)) or body_text(exc.body)
    return redact_secrets(text, secrets=secrets) or None


def is_unreachable(exc: BaseException) -> bool:
    """The judge could not be reached, as opposed to answering badly: no connection
    (refused, reset, no route, a connect that timed out) or a gateway in front of it
    saying so (502, 503, 504). A reply that is slow to come (read timeout) is not this,
    nor is the egress policy refusing the address."""
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (502, 503, 504)
    if isinstance(exc, openai.APITimeoutError):
        cause = exc.__cause__
        return type(cause).__name__ in ("ConnectTimeout", "PoolTimeout")
    return isinstance(exc, openai.APIConnectionError) and refused_cause(exc) is None


def _is_transient(exc: Exception) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


@dataclass
class JudgeClock:
    """The seconds a step's requests spent at the judge: a driver adds each request's
    time, never the time it waited for a limiter slot."""

    seconds: float = 0.0

    def add(self, round_trip: float, reported: float | None) -> float:
        """One request: the judge's own figure when its reply gave one (no more than
        the round trip), else the round trip from sent to answered; the seconds added."""
        seconds = round_trip if reported is None else min(reported, round_trip)
        self.seconds += seconds
        return seconds


@dataclass
class _Reply:
    reported: float | None = None


# The request a driver is sending in this thread or task: the judge client's response
# hook (``note_reply``) records there what the judge says its own time was.
_REPLY: contextvars.ContextVar[_Reply | None] = contextvars.ContextVar(
    "judge_reply", default=None
)


def reported_seconds(headers: Any) -> float | None:
    """The judge's own time for a reply, when it says (``openai-processing-ms``, as
    OpenAI's API and the offline judge send): from the client, a reply waiting in the
    socket for a busy event loop looks like a judge still working."""
    value = headers.get("openai-processing-ms") if headers is not None else None
    try:
        seconds = float(value) / 1000 if value else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < math.inf else None


def note_reply(response: Any) -> None:
    """httpx response hook of the judge clients (``scoring.judge.make_client``)."""
    reply = _REPLY.get()
    if reply is not None:
        reply.reported = reported_seconds(response.headers)


async def anote_reply(response: Any) -> None:
    """``note_reply`` for the asyncio clients."""
    note_reply(response)


class SendRequest(NamedTuple):
    """Action: POST one chat completion (inside the limiter); the reply is the
    ``ChatCompletion``, or the client's exception is thrown back into the plan. The
    driver adds the request's own time to ``clock``."""

    messages: list[dict[str, Any]]
    params: dict[str, Any]
    clock: JudgeClock


class Wait(NamedTuple):
    """Action: sleep before a retry (outside the limiter)."""

    seconds: float


class CacheRead(NamedTuple):
    """Action: look ``key`` up in the cache; the reply is the stored value or None."""

    key: str


class CacheWrite(NamedTuple):
    """Action: store ``value`` under ``key``."""

    key: str
    value: dict[str, Any]


Action = SendRequest | Wait | CacheRead | CacheWrite
# A plan is a generator of actions: the driver performs each and sends its reply back
# (or throws its exception in). The logic of a step (formats, cache, retries, repair)
# is written once here; a sync driver (threads) and an async driver (asyncio, many
# calls per worker slot) only perform I/O.
Plan = Generator[Action, Any, _T]


@dataclass(frozen=True)
class StepSettings:
    """What a step plan needs to know of its judge (no I/O objects)."""

    model: str
    base_url: str
    temperature: float = 0.0
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy())
    use_cache: bool = False
    # Sent as the request's ``seed`` when set: one of k repeated answers
    # (scoring.judge's ``sample``), so each is its own call and cache entry.
    seed: int | None = None
    # Values never to store in an error text (the connection's own key).
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(
        cls,
        client: openai.OpenAI | openai.AsyncOpenAI,
        model: str,
        base_url: str | None,
        temperature: float,
        retry: RetryPolicy | None,
        cache: object | None,
    ) -> StepSettings:
        """A runner's settings: the base URL defaults to the client's."""
        return cls(
            model=model,
            base_url=(base_url or str(client.base_url)).rstrip("/"),
            temperature=temperature,
            retry=retry or RetryPolicy(),
            use_cache=cache is not None,
            secrets=tuple(k for k in (getattr(client, "api_key", None),) if k),
        )


def step_plan(
    step: Step, messages: Messages, settings: StepSettings, rng: random.Random
) -> Plan[tuple[Reply, StepRecord]]:
    """The plan of one step; StepFailed when it cannot produce a valid reply."""
    start = time.perf_counter()
    clock = JudgeClock()
    record = StepRecord(name=step.name, messages=[dict(m) for m in messages])
    first = RESPONSE_FORMATS.index(remembered_format(settings.base_url, settings.model))
    try:
        for mode in RESPONSE_FORMATS[first:]:
            record.response_format = mode
            sent = _messages_for(step, messages, mode)
            record.messages = sent
            params = _params(step, mode, settings.temperature, settings.seed)
            key = cache_key(settings.base_url, settings.model, sent, params)
            if settings.use_cache:
                hit = _cached_reply(step, (yield CacheRead(key)), record)
                if hit is not None:
                    return hit, record
            try:
                raw = yield from _request_plan(
                    sent, params, record, settings, rng, clock
                )
            except _FormatRejected:
                continue
            _remember_format(settings.base_url, settings.model, mode)
            reply = yield from _validate_or_repair(
                step, sent, params, raw, record, settings, rng, clock
            )
            if settings.use_cache:
                yield CacheWrite(
                    key,
                    {
                        "raw": record.raw,
                        "usage": dict(record.usage),
                        "response_format": mode,
                    },
                )
            return reply, record
        raise _fail(record, "the endpoint rejected every response format", None)
    finally:
        elapsed_ms = (time.perf_counter() - start) * 1000
        record.latency_ms = round(clock.seconds * 1000, 3)
        record.wait_ms = round(max(0.0, elapsed_ms - record.latency_ms), 3)


def _messages_for(step: Step, messages: Messages, mode: str) -> list[dict[str, Any]]:
    sent = [dict(m) for m in messages]
    if mode != "json_schema" and sent and sent[0]["role"] == "system":
        sent[0]["content"] = sent[0]["content"] + schema_instructions(step)
    return sent


def _params(
    step: Step, mode: str, temperature: float, seed: int | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"temperature": temperature}
    if seed is not None:
        params["seed"] = seed
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


def _cached_reply(step: Step, value: Any, record: StepRecord) -> Reply | None:
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


def _fail(record: StepRecord, message: str, raw: str | None) -> StepFailed:
    record.error = message
    return StepFailed(f"step {record.name!r}: {message}", record, raw)


def _validate_or_repair(
    step: Step,
    sent: list[dict[str, Any]],
    params: dict[str, Any],
    raw: str,
    record: StepRecord,
    settings: StepSettings,
    rng: random.Random,
    clock: JudgeClock,
) -> Plan[Reply]:
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
    raw2 = yield from _request_plan(conversation, params, record, settings, rng, clock)
    try:
        return step.parse(raw2)
    except ValueError as exc:
        raise _fail(
            record,
            f"the judge's reply did not validate after one repair attempt: {exc}",
            raw2,
        ) from exc


def _request_plan(
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    record: StepRecord,
    settings: StepSettings,
    rng: random.Random,
    clock: JudgeClock,
) -> Plan[str]:
    policy = settings.retry
    attempt = 0
    outage_attempt = 0
    down_since: float | None = None
    while True:
        record.attempts += 1
        try:
            response = yield SendRequest(messages, params, clock)
            break
        except openai.APIStatusError as exc:
            if "response_format" in params and _is_format_rejection(exc):
                raise _FormatRejected() from exc
            if not _is_transient(exc):
                record.error_body = _error_body(exc, settings.secrets)
                raise _fail(record, _describe(exc, settings.secrets), None) from exc
            error: Exception = exc
            retry_after = parse_retry_after(exc.response.headers)
        except openai.APIConnectionError as exc:
            refused = refused_cause(exc)
            if refused is not None:
                # A policy answer, not a network fault: retrying cannot change it.
                raise _fail(record, str(refused), None) from exc
            error = exc
            retry_after = None
        if policy.outage_seconds > 0 and is_unreachable(error):
            now = policy.clock()
            down_since = now if down_since is None else down_since
            shared = policy.outage.down_for() if policy.outage is not None else None
            down = now - down_since if shared is None else shared
            if down >= policy.outage_seconds:
                record.error_body = _error_body(error, settings.secrets)
                raise _fail(
                    record,
                    f"judge unreachable for {down:.0f} s, longer than the "
                    f"{policy.outage_seconds:g} s allowed: "
                    f"{_describe(error, settings.secrets)}",
                    None,
                ) from error
            wait = min(
                policy.backoff(outage_attempt, retry_after, rng),
                policy.max_outage_delay,
            )
            yield Wait(wait)
            outage_attempt += 1
            continue
        down_since = None
        outage_attempt = 0
        if attempt >= policy.max_retries:
            record.error_body = _error_body(error, settings.secrets)
            raise _fail(
                record,
                f"gave up after {attempt + 1} attempts: {_describe(error, settings.secrets)}",
                None,
            ) from error
        yield Wait(policy.backoff(attempt, retry_after, rng))
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


class _Finished(NamedTuple):
    value: Any


# What a request raises that the plan decides about (retry, fall back, fail the step);
# anything else (a cancelled run, a broken cache) ends the plan as it is.
_CLIENT_ERRORS = (openai.APIStatusError, openai.APIConnectionError)


def _advance(
    plan: Plan[Any], reply: Any, error: Exception | None
) -> Action | _Finished:
    """The plan's next action, given the last one's reply or error; _Finished at the end."""
    try:
        return plan.send(reply) if error is None else plan.throw(error)
    except StopIteration as stop:
        return _Finished(stop.value)


def _chat_body(model: str, request: SendRequest) -> dict[str, Any]:
    # The same POST that chat.completions.create sends, minus its per-call TypedDict
    # transform of the body: that transform was a third of the client's CPU per call
    # (~1 ms of 2.5 in a profile of the run benchmark's workers), and a run's workers
    # are CPU-bound. Rechecked 23 November on a mock transport (no network):
    # 0.55-0.7 ms of CPU per call this way, 1.15-1.55 ms through the SDK.
    return {"model": model, "messages": request.messages, **request.params}


class StepRunner:
    """Runs step plans with a blocking ``openai.OpenAI`` client (safe to share between
    threads): each request inside the limiter, the waits with ``retry.sleep``."""

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
        self.cache = cache
        self.limiter = limiter
        self.settings = StepSettings.of(
            client, model, base_url, temperature, retry, cache
        )
        self.rng = random.Random(seed)

    def run(self, step: Step, messages: Messages) -> tuple[Reply, StepRecord]:
        """Run one step; StepFailed when it cannot produce a valid reply."""
        return self.drive(step_plan(step, messages, self.settings, self.rng))

    def drive(self, plan: Plan[_T]) -> _T:
        """Perform a plan's actions until it returns."""
        reply: Any = None
        error: Exception | None = None
        while not isinstance(action := _advance(plan, reply, error), _Finished):
            reply, error = None, None
            try:
                reply = self._perform(action)
            except _CLIENT_ERRORS as exc:
                error = exc
        return cast(_T, action.value)

    def _perform(self, action: Action) -> Any:
        if isinstance(action, SendRequest):
            limiter = (
                self.limiter() if self.limiter is not None else contextlib.nullcontext()
            )
            with limiter:
                reply = _Reply()
                token = _REPLY.set(reply)
                sent = time.perf_counter()
                try:
                    return self.client.post(
                        "/chat/completions",
                        body=_chat_body(self.settings.model, action),
                        cast_to=ChatCompletion,
                    )
                finally:
                    action.clock.add(time.perf_counter() - sent, reply.reported)
                    _REPLY.reset(token)
        if isinstance(action, Wait):
            self.settings.retry.sleep(action.seconds)
            return None
        assert self.cache is not None
        if isinstance(action, CacheRead):
            return self.cache.get(action.key)
        self.cache.set(action.key, action.value)
        return None


class AsyncStepRunner:
    """Runs step plans with an ``openai.AsyncOpenAI`` client: one event loop holds as
    many calls in flight as its limiter grants, so a worker slot is not one call."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        base_url: str | None = None,
        temperature: float = 0.0,
        cache: AsyncJudgeCache | None = None,
        limiter: AsyncLimiter | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int | None = None,
        on_request: Callable[[float], None] | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.limiter = limiter
        self.sleep = sleep
        # Told each request's judge seconds as it ends (a run's live figures).
        self.on_request = on_request
        self.settings = StepSettings.of(
            client, model, base_url, temperature, retry, cache
        )
        self.rng = random.Random(seed)

    async def run(self, step: Step, messages: Messages) -> tuple[Reply, StepRecord]:
        return await self.drive(step_plan(step, messages, self.settings, self.rng))

    async def drive(self, plan: Plan[_T]) -> _T:
        reply: Any = None
        error: Exception | None = None
        while not isinstance(action := _advance(plan, reply, error), _Finished):
            reply, error = None, None
            try:
                reply = await self._perform(action)
            except _CLIENT_ERRORS as exc:
                error = exc
        return cast(_T, action.value)

    async def _perform(self, action: Action) -> Any:
        if isinstance(action, SendRequest):
            limiter = (
                self.limiter() if self.limiter is not None else contextlib.nullcontext()
            )
            async with limiter:
                reply = _Reply()
                token = _REPLY.set(reply)
                sent = time.perf_counter()
                try:
                    return await self.client.post(
                        "/chat/completions",
                        body=_chat_body(self.settings.model, action),
                        cast_to=ChatCompletion,
                    )
                finally:
                    seconds = action.clock.add(
                        time.perf_counter() - sent, reply.reported
                    )
                    _REPLY.reset(token)
                    if self.on_request is not None:
                        self.on_request(seconds)
        if isinstance(action, Wait):
            await self.sleep(action.seconds)
            return None
        assert self.cache is not None
        if isinstance(action, CacheRead):
            return await self.cache.get(action.key)
        await self.cache.set(action.key, action.value)
        return None
