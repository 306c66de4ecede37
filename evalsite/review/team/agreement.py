"""The agreement page's figures: read for the page, where they may be the latest
ones of an earlier review state (marked, while a background task recounts), and
that recount, an exact one of a single state."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction

from evalsite.evals.models import Run
from evalsite.lib.tasks import task_send
from evalsite.review.estimates.annotators import AnnotatorVerdict, annotator_test
from evalsite.review.models import ReviewQueue
from evalsite.review.team.selectors import (
    AgreementReport,
    ReviewState,
    agreement_report,
    review_state,
)

logger = logging.getLogger(__name__)

AGREEMENT_RECOUNT_TASK = "review.agreement_recount"

# One recount per state and margin however many viewers poll. Short, so that a
# recount lost with its worker is sent again by the next poll a minute later; a
# recount slower than this is only sent twice, which is harmless (idempotent).
RECOUNT_LOCK_SECONDS = 60


@dataclass(frozen=True)
class AgreementPage:
    scorers: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    state: ReviewState
    # The time of the oldest figures shown when some are of an earlier state; None
    # when every figure is a count of the current state.
    as_of: datetime | None


def agreement_page_figures(
    *,
    run: Run,
    epsilon: float,
    allow_stale: bool = False,
    state: ReviewState | None = None,
) -> AgreementPage:
    """Per scorer (agreement and the alternative annotator test at `epsilon`) and
    per queue (the 20 newest unarchived), all cached by one review state."""
    if state is None:
        state = review_state(run_id=run.pk)
    figures: list[AgreementReport | AnnotatorVerdict] = []
    scorers: list[dict[str, Any]] = []
    for rs in run.run_scorers.all():
        report = agreement_report(run_scorer=rs, state=state, allow_stale=allow_stale)
        alt = annotator_test(
            run_scorer=rs, epsilon=epsilon, state=state, allow_stale=allow_stale
        )
        scorers.append({"name": rs.name, "report": report, "alt": alt})
        figures += [report, alt]
    queues: list[dict[str, Any]] = []
    for q in ReviewQueue.objects.filter(run=run, archived=False).order_by(
        "-created_at"
    )[:20]:
        # A pairwise queue's figures are its own section's.
        queue_report = None
        if not q.is_pairwise:
            queue_report = agreement_report(
                queue=q, state=state, allow_stale=allow_stale
            )
            figures.append(queue_report)
        queues.append({"queue": q, "report": queue_report})
    stale = [f.as_of for f in figures if f.as_of is not None]
    return AgreementPage(
        scorers=scorers,
        queues=queues,
        state=state,
        as_of=min(stale, default=None),
    )


def agreement_recount_send(*, run_id: int, epsilon: float, state: ReviewState) -> bool:
    """Have the figures of `state` recounted in the background, unless a recount of
    it was sent in the last minute. True when this call sent it."""
    lock = state.key(f"recount:{epsilon!r}")
    try:
        sent = bool(cache.add(lock, True, RECOUNT_LOCK_SECONDS))
    except Exception:  # noqa: BLE001 - no cache, no stale figures to replace
        logger.warning("agreement recount lock unavailable", exc_info=True)
        return False
    if sent:
        task_send(AGREEMENT_RECOUNT_TASK, run_id, epsilon)
    return sent


def agreement_recount(*, run_id: int, epsilon: float) -> None:
    """Count (and cache) every figure of the agreement page for the current state.

    On PostgreSQL every read runs in one REPEATABLE READ transaction: one snapshot,
    so the figures are an exact recount of the state read first, even when answers
    commit meanwhile, and they are stored under that state's key and as the latest
    figures. Without it a recount that an answer overlapped would be stored nowhere
    (`cached_by_state` keeps only figures whose state held throughout), and on a
    queue answered every few seconds the page would stay marked for good. A
    snapshot rather than a retry loop: simpler, and it ends. It only reads (a few
    seconds on bench_million), so holding it back costs vacuum little. SQLite's
    transactions read one snapshot anyway; inside an outer transaction (the
    tests) the isolation level cannot be changed and the outer one decides."""
    in_outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not in_outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        # The first read takes the snapshot: the state's read_at, taken just before,
        # is then no later than it (the figures count everything committed by then).
        state = review_state(run_id=run_id)
        run = Run.objects.filter(pk=run_id).first()
        if run is None:  # deleted since
            return
        agreement_page_figures(run=run, epsilon=epsilon, state=state)
