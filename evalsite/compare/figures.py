"""The compare page's figures of large comparisons, counted in the background.

A first compare of two 1M-result runs counts 200k matched items per scorer pair
(one grouped join each, 200–300 ms a pair): the page shows its rows at once and
polls for the figures, which a task counts from one snapshot and caches under the
results' state, where the page then reads them (selectors._aggregate_cached).
"""

from __future__ import annotations

import hashlib
import logging

from django.core.cache import cache
from django.db import connection, transaction

from evalsite.compare.selectors import Comparison, runs_compare
from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.matching.selectors import MatchSpec
from evalsite.evals.models import Run
from evalsite.lib.tasks import task_send

logger = logging.getLogger(__name__)

COMPARE_FIGURES_TASK = "compare.figures_count"

# One count per state however many viewers poll. Short, so that a count lost with
# its worker is sent again by a poll a minute later; a count slower than this is
# only sent twice, which is harmless (idempotent).
COUNT_LOCK_SECONDS = 60


def compare_figures_lock(*, comparison: Comparison) -> str | None:
    """The cache key that dedups counts of the uncounted pairs in their state."""
    states = sorted(d.state or "" for d in comparison.uncounted)
    if not states:
        return None
    return (
        f"compare:figures-lock:{hashlib.sha256('|'.join(states).encode()).hexdigest()}"
    )


def compare_figures_send(*, comparison: Comparison) -> bool:
    """Have the uncounted figures of `comparison` counted in the background, unless
    a count of the same pairs in the same state was sent in the last minute. True
    when this call sent it."""
    lock = compare_figures_lock(comparison=comparison)
    if lock is None:
        return False
    try:
        sent = bool(cache.add(lock, True, COUNT_LOCK_SECONDS))
    except Exception:  # noqa: BLE001 - no cache: nothing to count into either
        logger.warning("compare figures lock unavailable", exc_info=True)
        return False
    if sent:
        spec = comparison.spec
        task_send(
            COMPARE_FIGURES_TASK, [r.pk for r in comparison.runs], spec.mode, spec.key
        )
    return sent


def compare_figures_count(*, run_ids: list[int], match: str, key: str) -> None:
    """Count (and cache) every figure of the comparison of these runs not cached yet.

    On PostgreSQL in one REPEATABLE READ transaction: the scorers' review versions
    (the state a pair's figures are cached under) and the results counted are then
    of one snapshot, even when reviews commit meanwhile. Inside an outer transaction
    (the tests) the isolation level cannot be changed and the outer one decides. A
    run deleted since, or a comparison that no longer holds (a duplicate key), has
    nothing to count: the page says so on its next poll."""
    in_outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not in_outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        runs_by_id = Run.objects.in_bulk(run_ids)
        if len(runs_by_id) != len(run_ids):
            return
        try:
            spec = MatchSpec(mode=match, key=key)  # type: ignore[arg-type]
            runs_compare(runs=[runs_by_id[pk] for pk in run_ids], spec=spec)
        except ApplicationError:
            logger.info("compare figures not counted: %s", run_ids, exc_info=True)
