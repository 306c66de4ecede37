"""The gate's rule, on the compare API's figures for each scorer (pure functions).

Compare gives, per scorer matched by kind and name, the mean difference (candidate −
baseline) over the items both runs scored, with its 95 % paired t-interval. Turned so
that a positive change is an improvement (the scorer's direction), the interval is
read against −margin, the largest loss the user accepts:

* the whole interval at or above −margin: no regression beyond the margin (pass);
* the whole interval below −margin: a regression beyond the margin (fail);
* otherwise the interval straddles −margin, so it is too wide to tell either way:
  not enough evidence (more items, or a wider margin, would settle it).

A scorer with fewer than two items scored in both runs has no interval: not enough
evidence either. The run's answer is the worst of its scorers'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalsite_gate.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION

Verdict = Literal["pass", "regression", "not enough evidence"]
_EXIT = {"pass": EXIT_OK, "regression": EXIT_REGRESSION}


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class ScorerResult:
    """One scorer's figures from compare and the gate's verdict on them."""

    name: str
    kind: str
    direction: str
    n: int
    missing: int
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None  # candidate − baseline, as compare gives it
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    pass_rate_delta: float | None
    mcnemar_p: float | None
    verdict: Verdict
    reason: str

    @property
    def exit_code(self) -> int:
        return _EXIT.get(self.verdict, EXIT_INCONCLUSIVE)


def judge_pair(pair: Mapping[str, Any], *, margin: float) -> ScorerResult:
    """The verdict on one of compare's ``pairs`` for a margin in the score's units."""
    direction = str(pair.get("direction") or "higher")
    n = int(pair.get("n") or 0)
    delta = _float(pair.get("mean_delta"))
    low = _float(pair.get("mean_delta_ci_low"))
    high = _float(pair.get("mean_delta_ci_high"))
    verdict: Verdict
    if n < 2 or low is None or high is None:
        verdict = "not enough evidence"
        reason = f"{n} item{'' if n == 1 else 's'} scored in both runs: no interval"
    else:
        # Oriented so that a positive change is better whatever the direction.
        sign = -1.0 if direction == "lower" else 1.0
        worst, best = sorted((sign * low, sign * high))
        if worst >= -margin:
            verdict = "pass"
            reason = f"the 95 % interval stays above −{margin:g}"
        elif best < -margin:
            verdict = "regression"
            reason = f"the whole 95 % interval is a loss of more than {margin:g}"
        else:
            verdict = "not enough evidence"
            reason = f"the 95 % interval straddles −{margin:g}"
    return ScorerResult(
        name=str(pair.get("name", "")),
        kind=str(pair.get("kind", "")),
        direction=direction,
        n=n,
        missing=int(pair.get("missing") or 0),
        baseline_mean=_float(pair.get("a_mean")),
        candidate_mean=_float(pair.get("b_mean")),
        delta=delta,
        ci_low=low,
        ci_high=high,
        p_value=_float(pair.get("mean_delta_p")),
        pass_rate_delta=_float(pair.get("pass_rate_delta")),
        mcnemar_p=_float(pair.get("mcnemar_p")),
        verdict=verdict,
        reason=reason,
    )


def gate_exit_code(results: Iterable[ScorerResult]) -> int:
    """1 if any scorer regressed, else 2 if any lacks evidence (or there is no
    scorer at all: nothing was measured), else 0."""
    codes = {r.exit_code for r in results}
    if not codes:
        return EXIT_INCONCLUSIVE
    if EXIT_REGRESSION in codes:
        return EXIT_REGRESSION
    if EXIT_INCONCLUSIVE in codes:
        return EXIT_INCONCLUSIVE
    return EXIT_OK
