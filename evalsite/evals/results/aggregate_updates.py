"""Carrying the cached review aggregates to a run scorer's next review version by the
one change a review write made (a write: the verdict services call it once their
transaction commits). The aggregates themselves are read by aggregates.run_aggregates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.evals.results.aggregates import (
    REVIEW_GROUP_KEY,
    cache_get,
    cache_set,
    review_groups_key,
    score_scale,
    shift_group,
)


def review_groups_advance(
    *,
    run_scorer_id: int,
    options: Any,
    version: int,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> None:
    """After a review write committed as `version`, derive that version's review groups
    from the previous version's (when cached) by its one change: an override then
    costs no recount of the reviewed results. Call it only after the commit."""
    previous = cache_get(review_groups_key(run_scorer_id, options, version - 1))
    if previous is None:
        return
    scale = score_scale(options)
    groups = {tuple(g[f] for f in REVIEW_GROUP_KEY): dict(g) for g in previous}
    if before is not None:
        shift_group(groups, before, scale, -1)
    if after is not None:
        shift_group(groups, after, scale, 1)
    cache_set(
        review_groups_key(run_scorer_id, options, version),
        [g for g in groups.values() if g["n"] > 0],
    )
