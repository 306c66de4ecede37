"""Prediction-powered estimates of a mean score or a pass rate.

The judge scored all results; humans labelled n of them. Prediction-powered inference
(PPI, Angelopoulos et al., Science 2023) estimates the mean of the human label over all
results as

    θ̂(λ) = λ · mean(judge on the unlabelled) + mean(human − λ · judge on the labelled)

which is unbiased for any fixed λ: the second term corrects the judge's bias on the
items a human saw. λ = 1 is classical PPI, λ = 0 the human-only mean, and the
power-tuned variant (PPI++, Angelopoulos, Duchi & Zrnic 2023) picks the λ in [0, 1]
that minimises the variance, so the interval is (asymptotically) never wider than the
human-only one. `ppi_mean` follows ppi_py's `ppi_mean_pointestimate`/`ppi_mean_ci`
step by step (tests/scoring/test_estimates_ppi.py checks it to 1e-9).

`ppi_mean_ipw` is the same estimator when the labelled items were drawn by a known
design with unequal probabilities π_i (active or stratified sampling, Zrnic & Candès
2024): each item gets

    Z_i(λ) = λ · ŷ_i + (y_i − λ · ŷ_i) · ξ_i / π_i     (ξ_i = 1 if item i was labelled)

and θ̂ = mean(Z_i) over all N items. E[ξ_i / π_i] = 1, so θ̂ is unbiased for any λ;
the Z_i are independent, so the interval is the normal one on their mean.

numpy, because the app feeds 100k results per scorer and wants the figures in
milliseconds; no scipy: the normal quantile comes from the standard library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from scoring.inference.errors import NotEnoughData

ALPHA = 0.05
MIN_LABELS = 2

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PpiEstimate:
    """A corrected mean with its interval, and the human-only figure beside it.

    n is the number of human labels, N the number of results the judge scored without
    one. effective_labels is how many human-only labels the interval is worth
    (n × var_classical / var_ppi), capped at n + N: the judge cannot be worth more than
    labelling every result.
    """

    estimate: float
    ci_low: float
    ci_high: float
    half_width: float
    std_error: float
    lam: float
    n: int
    N: int
    classical_estimate: float
    classical_ci_low: float
    classical_ci_high: float
    classical_half_width: float
    classical_std_error: float
    effective_labels: float
    alpha: float = ALPHA

    @property
    def labels_added(self) -> float:
        """The effective labels the judge added to the n human ones."""
        return self.effective_labels - self.n


def z_quantile(alpha: float) -> float:
    """The two-sided normal critical value z_{1 − α/2}."""
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie in (0, 1)")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def _floats(values: npt.ArrayLike, name: str) -> Floats:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds a NaN or an infinite value")
    return array


def _normalised_weights(
    weights: npt.ArrayLike | None, size: int, name: str
) -> Floats | None:
    """ppi_py's convention: weights rescaled to sum to the sample size. None stays
    None (all ones), which spares the 100k-long unlabelled side a multiplication."""
    if weights is None:
        return None
    array = _floats(weights, name)
    if array.shape[0] != size:
        raise ValueError(f"{name} has {array.shape[0]} values for {size} items")
    if np.any(array < 0) or array.sum() <= 0:
        raise ValueError(f"{name} must be non-negative with a positive sum")
    normalised: Floats = array / array.sum() * size
    return normalised


def _times(weights: Floats | None, values: Floats) -> Floats:
    return values if weights is None else weights * values


def _pooled_variance(
    size_a: int, mean_a: float, var_a: float, size_b: int, mean_b: float, var_b: float
) -> float:
    """The ddof-1 variance of two samples put together, from each one's size, mean
    and ddof-0 variance (what np.var of their concatenation gives, without the copy)."""
    total = size_a + size_b
    squares = (
        size_a * var_a
        + size_b * var_b
        + size_a * size_b / total * (mean_a - mean_b) ** 2
    )
    return squares / (total - 1)


def _tuned_lambda(
    y: Floats,
    yhat: Floats,
    yhat_unlabeled: Floats,
    w: Floats | None,
    w_unlabeled: Floats | None,
    imputed_mean: float,
    imputed_var: float,
) -> float:
    """PPI++'s variance-minimising λ for a mean, clipped to [0, 1] (ppi_py's
    `_calc_lam_glm` with an identity Hessian): the gradients are taken at the λ = 1
    estimate, as there. imputed_mean/imputed_var are the mean and ddof-0 variance of
    the weighted unlabelled scores."""
    n, big_n = y.shape[0], yhat_unlabeled.shape[0]
    theta = imputed_mean + float(_times(w, y - yhat).mean())
    grads = _times(w, y - theta)
    grads_hat = _times(w, yhat - theta)
    cov = (
        2.0 * float(((grads - grads.mean()) * (grads_hat - grads_hat.mean())).sum()) / n
    )
    if w_unlabeled is None:
        # Unweighted, the gradients are the scores shifted by θ: same spread.
        unlabeled_mean, unlabeled_var = imputed_mean - theta, imputed_var
    else:
        grads_hat_unlabeled = w_unlabeled * (yhat_unlabeled - theta)
        unlabeled_mean = float(grads_hat_unlabeled.mean())
        unlabeled_var = float(grads_hat_unlabeled.var())
    var_hat = _pooled_variance(
        n,
        float(grads_hat.mean()),
        float(grads_hat.var()),
        big_n,
        unlabeled_mean,
        unlabeled_var,
    )
    if var_hat <= 0.0:
        # A judge that gives every result the same score carries no information.
        return 0.0
    lam = cov / (2.0 * (1.0 + n / big_n) * var_hat)
    return float(min(1.0, max(0.0, lam)))


def _estimate(
    *,
    estimate: float,
    std_error: float,
    lam: float,
    n: int,
    big_n: int,
    classical_estimate: float,
    classical_std_error: float,
    alpha: float,
) -> PpiEstimate:
    z = z_quantile(alpha)
    if std_error > 0.0:
        effective = n * (classical_std_error / std_error) ** 2
    else:
        effective = float(n) if classical_std_error == 0.0 else math.inf
    return PpiEstimate(
        estimate=estimate,
        ci_low=estimate - z * std_error,
        ci_high=estimate + z * std_error,
        half_width=z * std_error,
        std_error=std_error,
        lam=lam,
        n=n,
        N=big_n,
        classical_estimate=classical_estimate,
        classical_ci_low=classical_estimate - z * classical_std_error,
        classical_ci_high=classical_estimate + z * classical_std_error,
        classical_half_width=z * classical_std_error,
        classical_std_error=classical_std_error,
        effective_labels=min(effective, float(n + big_n)),
        alpha=alpha,
    )


def ppi_mean(
    y_labeled: npt.ArrayLike,
    yhat_labeled: npt.ArrayLike,
    yhat_unlabeled: npt.ArrayLike,
    *,
    alpha: float = ALPHA,
    power_tuned: bool = True,
    weights: npt.ArrayLike | None = None,
    weights_unlabeled: npt.ArrayLike | None = None,
) -> PpiEstimate:
    """The prediction-powered mean of the human label, with its 1 − α interval.

    y_labeled and yhat_labeled are the human label and the judge's score on the n
    reviewed results (a uniform random sample of them); yhat_unlabeled the judge's
    score on the N results nobody reviewed. power_tuned=False is classical PPI
    (λ = 1). weights/weights_unlabeled are ppi_py's per-item sample weights (rescaled
    to sum to each sample's size).

    Steps, as ppi_py: 1. λ (tuned at the λ = 1 estimate, or 1); 2. the point estimate
    with that λ; 3. the normal interval with the two samples' variances (ddof 0) added.
    """
    y = _floats(y_labeled, "y_labeled")
    yhat = _floats(yhat_labeled, "yhat_labeled")
    yhat_u = _floats(yhat_unlabeled, "yhat_unlabeled")
    n, big_n = y.shape[0], yhat_u.shape[0]
    if yhat.shape[0] != n:
        raise ValueError(f"{n} human labels but {yhat.shape[0]} judge scores for them")
    if n < MIN_LABELS:
        raise NotEnoughData(
            f"an estimate needs at least {MIN_LABELS} human labels; it has {n}: "
            f"{MIN_LABELS - n} more needed"
        )
    if big_n < 1:
        raise NotEnoughData(
            "an estimate needs at least one result without a human label"
        )
    w = _normalised_weights(weights, n, "weights")
    w_u = _normalised_weights(weights_unlabeled, big_n, "weights_unlabeled")

    weighted_u = _times(w_u, yhat_u)
    imputed_mean, imputed_var = float(weighted_u.mean()), float(weighted_u.var())
    lam = (
        _tuned_lambda(y, yhat, yhat_u, w, w_u, imputed_mean, imputed_var)
        if power_tuned
        else 1.0
    )
    # λ ≥ 0, so the imputed term's mean and spread are λ times the scores' own.
    rectifier = _times(w, y - lam * yhat)
    estimate = lam * imputed_mean + float(rectifier.mean())
    std_error = math.sqrt(
        lam * lam * imputed_var / big_n + float(rectifier.std()) ** 2 / n
    )
    labels = _times(w, y)
    return _estimate(
        estimate=estimate,
        std_error=std_error,
        lam=lam,
        n=n,
        big_n=big_n,
        classical_estimate=float(labels.mean()),
        classical_std_error=float(labels.std()) / math.sqrt(n),
        alpha=alpha,
    )


def ppi_pass_rate(
    passed_labeled: npt.ArrayLike,
    judge_passed_labeled: npt.ArrayLike,
    judge_passed_unlabeled: npt.ArrayLike,
    *,
    alpha: float = ALPHA,
    power_tuned: bool = True,
) -> PpiEstimate:
    """`ppi_mean` of 0/1 verdicts: the pass rate. The interval is the normal one and
    is not clipped to [0, 1] (so it matches ppi_py's); clip it for display."""
    for name, values in (
        ("passed_labeled", passed_labeled),
        ("judge_passed_labeled", judge_passed_labeled),
        ("judge_passed_unlabeled", judge_passed_unlabeled),
    ):
        array = np.asarray(values, dtype=np.float64)
        if not np.all((array == 0.0) | (array == 1.0)):
            raise ValueError(f"{name} must hold 0/1 verdicts only")
    return ppi_mean(
        passed_labeled,
        judge_passed_labeled,
        judge_passed_unlabeled,
        alpha=alpha,
        power_tuned=power_tuned,
    )


def ppi_paired_difference(
    y_a: npt.ArrayLike,
    y_b: npt.ArrayLike,
    yhat_a_labeled: npt.ArrayLike,
    yhat_b_labeled: npt.ArrayLike,
    yhat_a_unlabeled: npt.ArrayLike,
    yhat_b_unlabeled: npt.ArrayLike,
    *,
    alpha: float = ALPHA,
    power_tuned: bool = True,
) -> PpiEstimate:
    """The corrected difference run A − run B on matched items: `ppi_mean` on the
    per-item differences. Labelled items are those a human reviewed in both runs
    (positions align across the *_labeled arrays); the unlabelled ones are the other
    matched items, aligned the same way. Pairing removes the item-to-item spread the
    two runs share, which is what makes the interval narrow."""
    return ppi_mean(
        _floats(y_a, "y_a") - _floats(y_b, "y_b"),
        _floats(yhat_a_labeled, "yhat_a_labeled")
        - _floats(yhat_b_labeled, "yhat_b_labeled"),
        _floats(yhat_a_unlabeled, "yhat_a_unlabeled")
        - _floats(yhat_b_unlabeled, "yhat_b_unlabeled"),
        alpha=alpha,
        power_tuned=power_tuned,
    )


def ppi_mean_ipw(
    yhat: npt.ArrayLike,
    inclusion: npt.ArrayLike,
    labeled: npt.ArrayLike,
    y_labeled: npt.ArrayLike,
    *,
    alpha: float = ALPHA,
    power_tuned: bool = True,
) -> PpiEstimate:
    """The prediction-powered mean when item i was labelled with known probability
    π_i (independently, Poisson sampling; see scoring.inference.designs), by inverse
    probability weighting (Zrnic & Candès 2024).

    yhat and inclusion hold the judge's score and π_i for all items; labeled is a
    boolean mask over them; y_labeled the human labels of the labelled items in
    order. With A_i = ŷ_i (1 − ξ_i/π_i) and B_i = y_i ξ_i/π_i, Z_i = λ A_i + B_i:
    1. λ = −cov(A, B) / var(A), clipped to [0, 1] (the variance-minimising one;
       λ = 1 without tuning); λ = 0 is the human-only Horvitz–Thompson mean;
    2. θ̂ = mean(Z), standard error sd(Z)/√N (ddof 0, as `ppi_mean`).
    """
    f = _floats(yhat, "yhat")
    pi = _floats(inclusion, "inclusion")
    mask = np.asarray(labeled, dtype=bool)
    y = _floats(y_labeled, "y_labeled")
    total = f.shape[0]
    if pi.shape[0] != total or mask.shape != (total,):
        raise ValueError("yhat, inclusion and labeled must have one value per item")
    n = int(mask.sum())
    if y.shape[0] != n:
        raise ValueError(
            f"{n} items are marked labelled but {y.shape[0]} labels were given"
        )
    if n < MIN_LABELS:
        raise NotEnoughData(
            f"an estimate needs at least {MIN_LABELS} human labels; it has {n}: "
            f"{MIN_LABELS - n} more needed"
        )
    if np.any(pi > 1.0) or np.any(pi < 0.0) or np.any(pi[mask] <= 0.0):
        raise ValueError(
            "inclusion probabilities must lie in [0, 1], positive where labelled"
        )

    ratio = np.zeros(total)
    ratio[mask] = 1.0 / pi[mask]
    a = f * (1.0 - ratio)
    b = np.zeros(total)
    b[mask] = y * ratio[mask]
    if power_tuned:
        var_a = float(a.var())
        cov_ab = float(((a - a.mean()) * (b - b.mean())).mean())
        # Every item labelled with certainty leaves A ≡ 0: nothing for the judge to add.
        lam = 0.0 if var_a == 0.0 else min(1.0, max(0.0, -cov_ab / var_a))
    else:
        lam = 1.0
    z = lam * a + b
    return _estimate(
        estimate=float(z.mean()),
        std_error=float(z.std()) / math.sqrt(total),
        lam=lam,
        n=n,
        big_n=total - n,
        classical_estimate=float(b.mean()),
        classical_std_error=float(b.std()) / math.sqrt(total),
        alpha=alpha,
    )
