"""How many labels to ask for, from the judge–human disagreement seen so far.

With m of the results labelled (uniformly) and the other M − m only judged, the PPI
estimate's variance for a given λ is

    Var(y − λ ŷ) / m + λ² Var(ŷ) / (M − m)

and PPI++ uses the λ that minimises it, λ(m) = Cov(y, ŷ) / ((1 + m/(M − m)) Var(ŷ)),
clipped to [0, 1]. Var(y − λŷ) and Cov(y, ŷ) come from today's labelled results,
Var(ŷ) from all of them, so the plan is as good as today's n makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from scoring.inference.errors import NotEnoughData
from scoring.inference.ppi import ALPHA, MIN_LABELS, Floats, ppi_mean, z_quantile

POWER = 0.8


@dataclass(frozen=True)
class LabelsNeeded:
    """n_required is None when even labelling every result would not get there."""

    target_std_error: float
    n: int
    n_required: int | None
    additional: int | None
    reachable: bool


@dataclass(frozen=True)
class DetectableDifference:
    """The smallest true difference detected with probability `power` by a two-sided
    test at level α with today's n labels: by the corrected estimate and by the human
    labels alone."""

    ppi: float
    classical: float
    n: int
    alpha: float
    power: float


def _power_z(power: float) -> float:
    if not 0.0 < power < 1.0:
        raise ValueError("power must lie in (0, 1)")
    return NormalDist().inv_cdf(power)


def _std_errors(
    y: Floats,
    yhat: Floats,
    yhat_unlabeled: Floats,
    m: npt.NDArray[np.int64],
    power_tuned: bool,
) -> Floats:
    """The PPI standard error with m labels out of all results, for each m."""
    total = y.shape[0] + yhat_unlabeled.shape[0]
    # The same moments as `ppi_mean`, so the plan at today's n is today's interval.
    var_y = float(y.var())
    cov = float(((y - y.mean()) * (yhat - yhat.mean())).mean())
    var_hat_labeled = float(yhat.var())
    var_hat_unlabeled = float(yhat_unlabeled.var())
    var_hat = float(np.var(np.concatenate([yhat, yhat_unlabeled]), ddof=1))
    unlabeled = (total - m).astype(np.float64)
    m_float = m.astype(np.float64)
    if power_tuned and var_hat > 0:
        lam = np.clip(
            cov / ((1.0 + m_float / np.maximum(unlabeled, 1.0)) * var_hat), 0.0, 1.0
        )
    elif power_tuned:
        lam = np.zeros_like(m_float)
    else:
        lam = np.ones_like(m_float)
    rectifier = np.maximum(var_y - 2.0 * lam * cov + lam * lam * var_hat_labeled, 0.0)
    imputed = lam * lam * var_hat_unlabeled / np.maximum(unlabeled, 1.0)
    # All results labelled: the human mean of everything.
    variance = np.where(unlabeled > 0, rectifier / m_float + imputed, var_y / m_float)
    result: Floats = np.sqrt(variance)
    return result


def labels_needed(
    y_labeled: npt.ArrayLike,
    yhat_labeled: npt.ArrayLike,
    yhat_unlabeled: npt.ArrayLike,
    *,
    half_width: float | None = None,
    difference: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    power_tuned: bool = True,
) -> LabelsNeeded:
    """The labels needed for an interval of half-width `half_width`, or to detect a
    true `difference` with probability `power` (pass per-item differences of two runs
    to plan a comparison). Exactly one of the two targets.

    Steps: 1. the target standard error (h / z_{1−α/2}, or d / (z_{1−α/2} + z_power));
    2. the PPI standard error for every m from today's n to all results;
    3. the first m that reaches the target.
    """
    if (half_width is None) == (difference is None):
        raise ValueError("give exactly one of half_width and difference")
    y = np.asarray(y_labeled, dtype=np.float64)
    yhat = np.asarray(yhat_labeled, dtype=np.float64)
    yhat_u = np.asarray(yhat_unlabeled, dtype=np.float64)
    n = y.shape[0]
    if n < MIN_LABELS:
        raise NotEnoughData(
            f"planning needs at least {MIN_LABELS} human labels to measure the judge's "
            f"disagreement; it has {n}: {MIN_LABELS - n} more needed"
        )
    if yhat.shape[0] != n:
        raise ValueError(f"{n} human labels but {yhat.shape[0]} judge scores for them")
    if half_width is not None:
        if half_width <= 0:
            raise ValueError("half_width must be positive")
        target = half_width / z_quantile(alpha)
    else:
        assert difference is not None
        if difference == 0:
            raise ValueError("difference must not be zero")
        target = abs(difference) / (z_quantile(alpha) + _power_z(power))
    total = n + yhat_u.shape[0]
    m = np.arange(n, total + 1, dtype=np.int64)
    errors = _std_errors(y, yhat, yhat_u, m, power_tuned)
    reached = np.flatnonzero(errors <= target)
    if reached.size == 0:
        return LabelsNeeded(target, n, None, None, False)
    required = int(m[reached[0]])
    return LabelsNeeded(target, n, required, required - n, True)


def minimum_detectable_difference(
    y_labeled: npt.ArrayLike,
    yhat_labeled: npt.ArrayLike,
    yhat_unlabeled: npt.ArrayLike,
    *,
    alpha: float = ALPHA,
    power: float = POWER,
    power_tuned: bool = True,
) -> DetectableDifference:
    """(z_{1−α/2} + z_power) × today's standard error, corrected and human-only. For
    two runs, pass the per-item differences (as `ppi_paired_difference` does)."""
    estimate = ppi_mean(
        y_labeled, yhat_labeled, yhat_unlabeled, alpha=alpha, power_tuned=power_tuned
    )
    factor = z_quantile(alpha) + _power_z(power)
    return DetectableDifference(
        ppi=factor * estimate.std_error,
        classical=factor * estimate.classical_std_error,
        n=estimate.n,
        alpha=alpha,
        power=power,
    )
