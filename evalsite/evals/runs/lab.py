"""The judge lab's cost preview: calls, tokens and cost of judging chosen items with
several versions of one scorer, before a lab run is started (`run_start` with
purpose "lab", `item_ids` and `scorer_options`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evalsite.datasets.models import Item
from evalsite.evals.models import ScorerConfig
from scoring import ScoringError, estimate_tokens

# Items whose estimate is computed exactly; the rest is extrapolated.
_ESTIMATE_SAMPLE = 50


@dataclass(frozen=True)
class LabVersion:
    """One version to replay: a label and the scorer options it judges with."""

    name: str
    options: dict[str, Any]


@dataclass(frozen=True)
class LabPreview:
    items: int
    versions: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal | None
    is_offline: bool
    error: str = ""

    @property
    def results(self) -> int:
        return self.items * self.versions


def lab_preview(
    *, scorer: ScorerConfig, versions: Sequence[LabVersion], item_ids: Sequence[int]
) -> LabPreview:
    """Calls, tokens and cost of judging `item_ids` with every one of `versions`:
    exact over the first items, extrapolated to the rest, priced at the judge
    connection's prices (None when it has none)."""
    ids = sorted(set(item_ids))
    sample = list(Item.objects.filter(pk__in=ids[:_ESTIMATE_SAMPLE]).order_by("pk"))
    totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    error = ""
    factor = len(ids) / len(sample) if sample else 0.0
    for version in versions:
        try:
            for item in sample:
                est = estimate_tokens(scorer.kind, item.as_case(), version.options)
                for key in totals:
                    totals[key] += int(est.get(key, 0))
        except ScoringError as exc:
            error = f"{version.name}: {exc}"
    calls = math.ceil(totals["calls"] * factor)
    prompt = math.ceil(totals["prompt_tokens"] * factor)
    completion = math.ceil(totals["completion_tokens"] * factor)
    judge = scorer.judge
    cost: Decimal | None = None
    if judge is not None and (
        judge.price_per_1k_input is not None or judge.price_per_1k_output is not None
    ):
        cost = (judge.price_per_1k_input or Decimal(0)) * Decimal(prompt) / 1000 + (
            judge.price_per_1k_output or Decimal(0)
        ) * Decimal(completion) / 1000
    return LabPreview(
        items=len(ids),
        versions=len(versions),
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=cost,
        is_offline=bool(judge and judge.is_offline),
        error=error,
    )
