"""Claims on results: who judges a result, for how long, and the one write of its outcome.

A dispatch message is delivered at least once (acks_late, redelivery after a lost
worker), and several dispatchers may work one run, so:
- a claim is a conditional UPDATE on pending results with no live lease (rows locked
  with SKIP LOCKED): a result is held by one claim token at a time;
- while judging, a heartbeat keeps the lease fresh; a lease that stops being refreshed
  belongs to a dead worker and the watchdog (run_recover) hands the result out again;
- the outcome is written only while the claim still holds, so a result is stored once;
- a claim that cannot finish (cancel, lost database) is released back to pending.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from evalsite.core.exceptions import ApplicationError
from evalsite.evals import conf, rawsql
from evalsite.evals.judges.services import judge_api_key
from evalsite.evals.models import JudgeConnection, Result
from scoring import JudgeResult, StepRecord, overridable_count
from scoring.redact import redact_secrets

logger = logging.getLogger(__name__)


def new_claim_token() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _claimable(now: datetime) -> Q:
    """Unclaimed, or claimed by a lease that has expired."""
    cutoff = now - timedelta(seconds=conf.lease_seconds())
    return Q(claimed_at__isnull=True) | Q(claimed_at__lt=cutoff)


def results_claim(
    *, run_id: int, token: str, count: int, ids: Sequence[int] | None = None
) -> list[Result]:
    """Claim up to `count` pending results of the run (unclaimed, or whose lease
    expired), only among `ids` when given; the claimed rows with what judging needs."""
    now = timezone.now()
    claimable = _claimable(now)
    with transaction.atomic():
        candidates = (
            Result.objects.filter(run_id=run_id, status=Result.Status.PENDING)
            .filter(claimable)
            .order_by("pk")
        )
        if ids is not None:
            candidates = candidates.filter(pk__in=ids)
        if connection.features.has_select_for_update_skip_locked:
            # Two dispatchers of one run take different rows instead of waiting on
            # each other's.
            candidates = candidates.select_for_update(skip_locked=True)
        found = list(candidates.values_list("pk", flat=True)[:count])
        if not found:
            return []
        # The conditions again in the UPDATE, on the result row only: Postgres re-checks
        # them on the locked row when two claims race. No run condition is needed:
        # cancelling a run cancels its pending results in the same transaction, and a
        # finished run has none.
        Result.objects.filter(pk__in=found, status=Result.Status.PENDING).filter(
            claimable
        ).update(claimed_at=now, claimed_by=token, attempts=F("attempts") + 1)
    return list(
        Result.objects.filter(pk__in=found, claimed_by=token).select_related(
            "item", "run", "run_scorer", "run_scorer__judge"
        )
    )


def results_claimable_at_most(*, run_id: int, limit: int) -> int:
    """How many results of the run a claim could take now, counted up to limit + 1
    (an index walk of at most that many rows, whatever the run's size)."""
    return (
        Result.objects.filter(run_id=run_id, status=Result.Status.PENDING)
        .filter(_claimable(timezone.now()))
        .values("pk")[: limit + 1]
        .count()
    )


def claim_release(*, token: str, result_id: int | None = None) -> None:
    """Give back to pending the result `result_id` held under `token`, or every result
    still pending under it."""
    held = Result.objects.filter(claimed_by=token, status=Result.Status.PENDING)
    if result_id is not None:
        held = held.filter(pk=result_id)
    held.update(claimed_at=None, claimed_by="")


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
            try:
                self.beat()
            except DatabaseError:
                logger.warning("lease heartbeat failed", exc_info=True)
            finally:
                # A beat every few seconds does not need a connection held open in
                # between (it would also outlive the work and block test teardown).
                connection.close()

    def beat(self) -> None:
        """Extend the lease of every result held in this process: one UPDATE per
        claim token (a dispatcher holds hundreds of results under one), in slices
        that keep the statement small.

        Rows another transaction holds are skipped, not waited for: they are a batch
        of outcomes being stored, which ends their lease anyway. A heartbeat that
        waited locked its rows in another order than the store and deadlocked with
        it (5 times in one 512-in-flight load test, each time a store stalled for
        Postgres's deadlock_timeout, 1 s)."""
        with self.lock:
            held = dict(self.held)
        by_token: dict[str, list[int]] = {}
        for result_id, token in held.items():
            by_token.setdefault(token, []).append(result_id)
        now = timezone.now()
        for token, ids in by_token.items():
            for start in range(0, len(ids), 500):
                with transaction.atomic():
                    free = (
                        Result.objects.filter(
                            pk__in=ids[start : start + 500],
                            claimed_by=token,
                            status=Result.Status.PENDING,
                        )
                        .select_for_update(skip_locked=True)
                        .values("pk")
                    )
                    Result.objects.filter(pk__in=free).update(claimed_at=now)


heartbeat = _Heartbeat()


@dataclass
class Outcome:
    """What judging one result came to: the judge's verdict, or the error and the calls
    made on the way. A judged result records ``judge_version_id`` (its run scorer's
    judge version) and, for a judge asked several times, every answer and the share
    that disagrees with the majority (``answers``, ``uncertainty``)."""

    result_id: int
    judged: JudgeResult | None
    steps: list[StepRecord]
    error: str = ""
    judge_version_id: int | None = None
    answers: list[dict[str, Any]] | None = None
    uncertainty: float | None = None


def store_result(
    result_id: int,
    token: str,
    *,
    judged: JudgeResult | None,
    error: str = "",
    steps: list[StepRecord],
    judge_version_id: int | None = None,
    answers: list[dict[str, Any]] | None = None,
    uncertainty: float | None = None,
) -> bool:
    """Write one result's outcome iff this claim still holds; False when it does not."""
    outcome = Outcome(
        result_id,
        judged,
        steps,
        error=error,
        judge_version_id=judge_version_id,
        answers=answers,
        uncertainty=uncertainty,
    )
    return results_store(token, [outcome])[0]


def results_store(token: str, outcomes: Sequence[Outcome]) -> list[bool]:
    """Write each outcome iff this claim still holds on its result, all in one
    transaction; for each, whether it was written.

    Error texts (the result's, each call's reason and the judge's reply to a failed
    call) are written with secrets redacted, the connection's own key included: a judge
    may echo the request's headers."""
    for outcome in outcomes:
        _redact(outcome)
    now = timezone.now()
    written: list[bool] = []
    with transaction.atomic():
        for outcome in outcomes:
            updated = Result.objects.filter(
                pk=outcome.result_id, claimed_by=token, status=Result.Status.PENDING
            ).update(**_outcome_fields(outcome, now))
            if updated:
                rawsql.judge_calls_insert(
                    result_id=outcome.result_id, steps=outcome.steps, now=now
                )
            written.append(bool(updated))
    return written


def _redact(outcome: Outcome) -> None:
    steps = outcome.steps
    if outcome.judged is not None and not any(s.error or s.error_body for s in steps):
        return
    secrets = _judge_secrets(outcome.result_id)
    outcome.error = redact_secrets(outcome.error, secrets=secrets)
    for step in steps:
        if step.error:
            step.error = redact_secrets(step.error, secrets=secrets)
        if step.error_body:
            step.error_body = redact_secrets(step.error_body, secrets=secrets)


def _outcome_fields(outcome: Outcome, now: datetime) -> dict[str, Any]:
    fields: dict[str, Any] = {"claimed_at": None, "claimed_by": "", "updated_at": now}
    judged = outcome.judged
    if judged is None:
        fields.update(
            status=Result.Status.ERROR, error=outcome.error or "unknown error"
        )
        return fields
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
        judge_version_id=outcome.judge_version_id,
        judge_answers=outcome.answers,
        judge_uncertainty=outcome.uncertainty,
    )
    return fields


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
