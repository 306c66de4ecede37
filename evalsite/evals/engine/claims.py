"""Judging one result: claim it, call the judge (shared limiter, DB cache), store it all.

A task is delivered at least once (acks_late, redelivery after a lost worker), so:
- the claim is a conditional UPDATE on a pending result with no live lease: a second
  delivery finds it claimed (or finished) and does nothing;
- while judging, a heartbeat keeps the lease fresh; a lease that stops being refreshed
  belongs to a dead worker and the watchdog (run_recover) hands the result out again;
- the write is conditional on still holding the claim, so a result is stored once;
- each judge step's reply is cached in the database as soon as it arrives, so work
  redone after a crash does not pay for the steps already answered.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import openai
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)
from django.db.models import F, Q
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from evalsite.core.exceptions import ApplicationError
from evalsite.evals import conf, rawsql
from evalsite.evals.limiter import FileLimiter, RedisLimiter, judge_limiter
from evalsite.evals.models import JudgeConnection, Result, Run, RunScorer
from evalsite.evals.services.egress import judge_address_guard
from evalsite.evals.services.judges import judge_api_key, judge_guard
from evalsite.evals.services.runs import run_finish_if_complete
from scoring import (
    JudgeResult,
    ScoringError,
    StepRecord,
    judge_case,
    make_client,
    overridable_count,
)
from scoring.client import Limiter as ScoringLimiter
from scoring.egress import AddressGuard
from scoring.redact import redact_secrets

logger = logging.getLogger(__name__)

# Errors of the infrastructure (not of the judge): the task is retried by Celery.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


class RunCancelledError(Exception):
    """The run was cancelled while this result was being judged."""


class DbJudgeCache:
    """scoring.JudgeCache backed by JudgeCacheEntry (shared by every worker), scoped to
    one project. Its two queries are plain SQL, see evalsite/evals/rawsql.py."""

    def __init__(self, *, project_id: int) -> None:
        self._scope = f"project-{project_id}:"

    def scoped(self, key: str) -> str:
        # One project's identical call never answers another's: a hit would hand it a
        # reply paid for elsewhere and tell it that this text was judged there.
        return hashlib.sha256((self._scope + key).encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        return rawsql.judge_cache_get(key=self.scoped(key))

    def set(self, key: str, value: dict[str, Any]) -> None:
        rawsql.judge_cache_set(key=self.scoped(key), value=value, now=timezone.now())


# --------------------------------------------------------------------------- per process

_lock = threading.Lock()
_clients: dict[tuple[Any, ...], openai.OpenAI] = {}
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


@sensitive_variables("key")
def _client_for(judge: JudgeConnection, base_url: str | None) -> openai.OpenAI:
    """One client (one HTTP connection pool) per judge settings per process."""
    url, key, guard = judge_client_args(judge, base_url)
    fingerprint = hashlib.sha256((key or "").encode()).hexdigest()
    cache_key = (judge.pk, url, fingerprint, judge.timeout_seconds)
    with _lock:
        client = _clients.get(cache_key)
        if client is None:
            client = make_client(url, key, judge.timeout_seconds, address_guard=guard)
            _clients[cache_key] = client
        return client


def limiter_for(judge: JudgeConnection) -> RedisLimiter | FileLimiter:
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


class _Heartbeat:
    """Refreshes the leases of the results this process is judging."""

    def __init__(self) -> None:
        self.held: dict[int, str] = {}
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.pid = 0

    def add(self, result_id: int, token: str) -> None:
        with self.lock:
            self.held[result_id] = token
            if (
                self.thread is None
                or not self.thread.is_alive()
                or self.pid != os.getpid()
            ):
                self.pid = os.getpid()
                self.thread = threading.Thread(
                    target=self._loop, name="result-lease-heartbeat", daemon=True
                )
                self.thread.start()

    def remove(self, result_id: int) -> None:
        with self.lock:
            self.held.pop(result_id, None)

    def _loop(self) -> None:
        while True:
            time.sleep(max(0.5, conf.lease_seconds() / 4))
            with self.lock:
                held = dict(self.held)
            if not held:
                continue
            by_token: dict[str, list[int]] = {}
            for result_id, token in held.items():
                by_token.setdefault(token, []).append(result_id)
            try:
                now = timezone.now()
                # One UPDATE per claim token (a dispatcher holds hundreds of results
                # under one), in slices that keep the statement small.
                for token, ids in by_token.items():
                    for start in range(0, len(ids), 500):
                        Result.objects.filter(
                            pk__in=ids[start : start + 500],
                            claimed_by=token,
                            status=Result.Status.PENDING,
                        ).update(claimed_at=now)
            except DatabaseError:
                logger.warning("lease heartbeat failed", exc_info=True)
            finally:
                # A beat every few seconds does not need a connection held open in
                # between (it would also outlive the work and block test teardown).
                connection.close()


heartbeat = _Heartbeat()


def new_claim_token() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def result_claim(*, result_id: int) -> str | None:
    """Claim a pending result; the claim token, or None if another delivery has it or it
    is finished (or cancelled)."""
    now = timezone.now()
    token = new_claim_token()
    cutoff = now - timedelta(seconds=conf.lease_seconds())
    # Conditions on the result row only: a single-table UPDATE, so Postgres re-checks
    # them on the locked row when two deliveries race (a join would be checked on a
    # stale snapshot). No run condition is needed: cancelling a run cancels its
    # pending results in the same transaction, and a finished run has none.
    claimed = (
        Result.objects.filter(pk=result_id, status=Result.Status.PENDING)
        .filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=cutoff))
        .update(claimed_at=now, claimed_by=token, attempts=F("attempts") + 1)
    )
    return token if claimed else None


def _release(result_id: int, token: str) -> None:
    Result.objects.filter(pk=result_id, claimed_by=token).update(
        claimed_at=None, claimed_by=""
    )


def _cancel_guard(run_id: int, limiter: RedisLimiter | FileLimiter) -> ScoringLimiter:
    """Wrap the limiter: before each judge request, stop if the run was cancelled
    (checked at most once a second)."""

    @contextmanager
    def guarded() -> Iterator[None]:
        status = _run_status(run_id)
        if status not in (Run.Status.QUEUED, Run.Status.RUNNING):
            raise RunCancelledError(f"run {run_id} is {status}")
        with limiter():
            yield

    return guarded


_STATUS_TTL = 1.0
_run_statuses: dict[int, tuple[float, str | None]] = {}


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


def _run_status(run_id: int) -> str | None:
    """The run's status, read at most once a second per process (cancel takes effect
    within a second without a query before every judge request)."""
    now = time.monotonic()
    cached = _run_statuses.get(run_id)
    if cached is not None and now - cached[0] < _STATUS_TTL:
        return cached[1]
    status = run_status(run_id)
    with _lock:
        if len(_run_statuses) > 1000:
            _run_statuses.clear()
        _run_statuses[run_id] = (now, status)
    return status


def store_result(
    result_id: int,
    token: str,
    *,
    judged: JudgeResult | None,
    error: str = "",
    steps: list[StepRecord],
) -> bool:
    """Write the outcome iff this claim still holds; False when it does not.

    Error texts (the result's, each call's reason and the judge's reply to a failed
    call) are written with secrets redacted, the connection's own key included: a judge
    may echo the request's headers (issue 27)."""
    if judged is None or any(s.error or s.error_body for s in steps):
        secrets = _judge_secrets(result_id)
        error = redact_secrets(error, secrets=secrets)
        for step in steps:
            if step.error:
                step.error = redact_secrets(step.error, secrets=secrets)
            if step.error_body:
                step.error_body = redact_secrets(step.error_body, secrets=secrets)
    with transaction.atomic():
        fields: dict[str, Any] = {
            "claimed_at": None,
            "claimed_by": "",
            "updated_at": timezone.now(),
        }
        if judged is not None:
            fields.update(
                status=Result.Status.OK,
                error="",
                analysis=judged.analysis,
                overridable_count=overridable_count(judged.kind, judged.analysis),
                judge_score=judged.score,
                judge_passed=judged.passed,
                reason=judged.reason or "",
                final_analysis=judged.analysis,
                final_score=judged.score,
                final_passed=judged.passed,
            )
        else:
            fields.update(status=Result.Status.ERROR, error=error or "unknown error")
        updated = Result.objects.filter(
            pk=result_id, claimed_by=token, status=Result.Status.PENDING
        ).update(**fields)
        if updated:
            rawsql.judge_calls_insert(
                result_id=result_id, steps=steps, now=timezone.now()
            )
    return bool(updated)


@sensitive_variables("key")
def _judge_secrets(result_id: int) -> tuple[str, ...]:
    """The key of the result's judge connection, to redact from its error texts."""
    judge_id = (
        Result.objects.filter(pk=result_id)
        .values_list("run_scorer__judge_id", flat=True)
        .first()
    )
    judge = JudgeConnection.objects.filter(pk=judge_id).first() if judge_id else None
    if judge is None or not judge.has_api_key:
        return ()
    try:
        key = judge_api_key(judge=judge)
    except ApplicationError:
        # Not usable now (env var unset, URL changed): the stored value may still
        # have been sent before, so redact what can be read of it.
        key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
    return (key,) if key else ()


def result_score(*, result_id: int, base_url: str | None = None) -> str:
    """Judge one result; returns "ok", "error", "skipped" or "cancelled".

    1. Claim it (nothing to do if another delivery has it or it is finished).
    2. Build the case from the item and run scoring.judge_case with the judge's client,
       the shared limiter (guarded by a cancel check) and the database cache.
    3. Store the analysis and scores (final = judge's), or the error with the calls
       made so far; a judge or case error fails only this result.
    4. Finish the run if nothing is pending any more.
    `base_url` overrides the judge's URL for the call (the demo's private offline
    judge); cache keys keep the configured URL so later runs reuse the replies.
    """
    token = result_claim(result_id=result_id)
    if token is None:
        return "skipped"
    heartbeat.add(result_id, token)
    run_id: int | None = None
    try:
        run_id, outcome = _judge_and_store(result_id, token, base_url)
    except RunCancelledError:
        _release(result_id, token)
        outcome = "cancelled"
    except TRANSIENT_ERRORS:
        # Give the result back so the retried task (or the watchdog) can claim it.
        try:
            _release(result_id, token)
        except DatabaseError:
            logger.warning("could not release result %s", result_id, exc_info=True)
        raise
    finally:
        heartbeat.remove(result_id)
    if run_id is None:
        run_id = (
            Result.objects.filter(pk=result_id).values_list("run_id", flat=True).first()
        )
    if run_id is not None:
        run_finish_if_complete(run_id=run_id)
    return outcome


def _judge_and_store(
    result_id: int, token: str, base_url: str | None
) -> tuple[int, str]:
    """(run id, outcome)."""
    result = Result.objects.select_related(
        "item", "run", "run_scorer", "run_scorer__judge"
    ).get(pk=result_id)
    run_id = result.run_id
    run_scorer = result.run_scorer
    judge = run_scorer.judge
    steps: list[StepRecord] = []
    try:
        client = None
        limiter = None
        model = ""
        temperature = 0.0
        configured_url = None
        if judge is not None:
            configured_url = judge.base_url
            client = _client_for(judge, base_url)
            limiter = _cancel_guard(result.run_id, limiter_for(judge))
            model, temperature = judge_model_settings(run_scorer, judge)
        judged = judge_case(
            run_scorer.kind,
            result.item.as_case(),
            run_scorer.options,
            client,
            model=model,
            temperature=temperature,
            cache=DbJudgeCache(project_id=result.run.project_id),
            limiter=limiter,
            base_url=configured_url,
        )
    except (RunCancelledError, OperationalError, InterfaceError):
        raise
    except Exception as exc:  # noqa: BLE001 - a run must finish: any other failure fails this result only
        message, steps = outcome_message(exc, steps, result_id=result_id)
        return run_id, _store_error(result_id, token, message, steps)
    stored = store_result(result_id, token, judged=judged, steps=judged.steps)
    return run_id, "ok" if stored else "skipped"


def outcome_message(
    exc: Exception, steps: list[StepRecord], *, result_id: int
) -> tuple[str, list[StepRecord]]:
    """What a result that failed with `exc` stores: its error message and the judge
    steps made so far."""
    if isinstance(exc, ScoringError):
        return str(exc), list(getattr(exc, "steps", None) or [])
    if isinstance(exc, ApplicationError):
        return exc.message, steps
    logger.error("result %s: unexpected error while judging", result_id, exc_info=exc)
    return f"unexpected error: {type(exc).__name__}: {exc}", steps


def _store_error(
    result_id: int, token: str, message: str, steps: list[StepRecord]
) -> str:
    stored = store_result(
        result_id, token, judged=None, error=message[:5000], steps=steps
    )
    return "error" if stored else "skipped"
