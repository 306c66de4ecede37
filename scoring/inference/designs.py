"""Review samples the estimators can use: each design returns the inclusion
probability π_i of every result, and `draw_sample` labels result i with probability
π_i independently (Poisson sampling). `ppi_mean_ipw` weights the labels by 1/π_i, so
any design with π_i > 0 for every result gives an unbiased estimate.

- uniform: π_i = budget / N;
- stratified: a share of the budget per stratum (judge pass/fail, a score bin), equal
  or proportional to the stratum's size;
- active: π_i ∝ the judge's uncertainty about result i (a split verdict, a score near
  the threshold, repeated scores that disagree), as in active inference (Zrnic & Candès 2024) and confidence-driven
  inference (Gligorić et al. 2025), mixed with a uniform floor so no result is left
  out and the weights stay bounded.

Every design spends the budget in expectation: Σ π_i = budget, with π_i ≤ 1 (a result
that would get more than certainty is capped at 1 and the excess goes to the others).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Allocation = Literal["equal", "proportional"]

ACTIVE_FLOOR = 0.1


def _check_budget(budget: float, size: int) -> None:
    if size < 1:
        raise ValueError("a design needs at least one item")
    if not budget > 0.0:  # also refuses NaN
        raise ValueError("the budget must be positive")


def _scale_to_budget(weights: Floats, budget: float) -> Floats:
    """π_i = min(1, c · w_i) with c such that Σ π_i = budget (water-filling): cap the
    items that reach 1 and share what is left among the rest, until none is over."""
    pi = np.zeros_like(weights)
    positive = weights > 0
    if budget >= int(positive.sum()):
        pi[positive] = 1.0
        return pi
    capped = np.zeros(weights.shape, dtype=bool)
    while True:
        free = positive & ~capped
        scale = (budget - capped.sum()) / weights[free].sum()
        over = free & (scale * weights >= 1.0)
        if not over.any():
            break
        capped |= over
    pi[capped] = 1.0
    pi[free] = scale * weights[free]
    return pi


def uniform_design(size: int, budget: float) -> Floats:
    """Every result labelled with the same probability budget / size."""
    _check_budget(budget, size)
    return np.full(size, min(1.0, budget / size))


def stratified_design(
    strata: Sequence[Hashable], budget: float, *, allocation: Allocation = "equal"
) -> Floats:
    """π per result for a budget split across strata (one label per result, e.g. the
    judge's verdict or a score bin). "equal" gives each stratum the same expected
    number of labels, so a rare stratum (the judge's failures) is well covered;
    "proportional" is the uniform design. A stratum smaller than its share is labelled
    in full and the rest of its share goes to the others."""
    size = len(strata)
    _check_budget(budget, size)
    if allocation == "proportional":
        weights = np.ones(size)
    else:
        # Item weight 1/N_h gives every stratum the same total weight.
        counts = Counter(strata)
        weights = np.array([1.0 / counts[s] for s in strata], dtype=np.float64)
    return _scale_to_budget(weights, budget)


def active_design(
    uncertainty: npt.ArrayLike, budget: float, *, floor: float = ACTIVE_FLOOR
) -> Floats:
    """π_i ∝ (1 − floor) · u_i / mean(u) + floor, scaled so Σ π = budget, capped at 1.

    uncertainty holds u_i ≥ 0 per result (see `split_uncertainty`,
    `threshold_uncertainty`, `spread_uncertainty`; combine several with np.maximum). floor in (0, 1] keeps
    every result at least floor × the uniform probability, which bounds the 1/π
    weights and so the variance when the judge is confidently wrong; floor = 1 is the
    uniform design. With no uncertainty anywhere the design is uniform.
    """
    u = np.asarray(uncertainty, dtype=np.float64)
    if u.ndim != 1 or np.any(~np.isfinite(u)) or np.any(u < 0):
        raise ValueError("uncertainty must be one non-negative number per item")
    if not 0.0 < floor <= 1.0:
        raise ValueError("floor must lie in (0, 1]")
    _check_budget(budget, u.shape[0])
    mean = float(u.mean())
    relative = u / mean if mean > 0 else np.ones_like(u)
    return _scale_to_budget((1.0 - floor) * relative + floor, budget)


def split_uncertainty(pass_fraction: npt.ArrayLike) -> Floats:
    """1 for a judge split half and half between pass and fail over repeated samples
    (or a pass probability of 0.5), 0 when unanimous: 1 − |2p − 1|."""
    p = np.asarray(pass_fraction, dtype=np.float64)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("pass fractions must lie in [0, 1]")
    result: Floats = 1.0 - np.abs(2.0 * p - 1.0)
    return result


def threshold_uncertainty(
    scores: npt.ArrayLike, threshold: float, spread: float
) -> Floats:
    """1 for a score on the pass threshold, falling linearly to 0 at `spread` away."""
    if spread <= 0:
        raise ValueError("spread must be positive")
    s = np.asarray(scores, dtype=np.float64)
    result: Floats = np.clip(1.0 - np.abs(s - threshold) / spread, 0.0, 1.0)
    return result


def spread_uncertainty(samples: npt.ArrayLike, low: float, high: float) -> Floats:
    """Disagreement between repeated judge scores of a result (one row per result,
    one column per sample) on a [low, high] scale: their standard deviation over the
    largest one possible, (high − low) / 2, so 0 when the samples agree and 1 when
    they split between the two ends."""
    if high <= low:
        raise ValueError("high must be above low")
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError("samples must have one row per result")
    result: Floats = np.clip(s.std(axis=1) / ((high - low) / 2.0), 0.0, 1.0)
    return result


def draw_sample(
    inclusion: npt.ArrayLike, rng: np.random.Generator
) -> npt.NDArray[np.bool_]:
    """Label result i with probability π_i, independently: the mask of labelled ones."""
    pi = np.asarray(inclusion, dtype=np.float64)
    mask: npt.NDArray[np.bool_] = rng.random(pi.shape[0]) < pi
    return mask
