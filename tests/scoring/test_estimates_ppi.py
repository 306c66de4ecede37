"""scoring.inference.ppi against the `ppi-python` reference, and its own contracts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from scoring.inference import (
    NotEnoughData,
    ppi_mean,
    ppi_mean_ipw,
    ppi_paired_difference,
    ppi_pass_rate,
)

TOL = 1e-9
SEEDS = [0, 1, 2, 3, 4, 5]


def _scores(seed: int, n: int = 150, big_n: int = 3000):
    """A 1–5 score with a judge that is biased and noisy about it."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=n + big_n).astype(float)
    judge = np.clip(truth + 0.4 + rng.normal(0, 0.9, size=n + big_n), 1, 5)
    return truth[:n], judge[:n], judge[n:]


def _verdicts(seed: int, n: int = 200, big_n: int = 5000):
    """Pass/fail with a judge that passes about 10 points more often."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n + big_n) < 0.6).astype(float)
    lenient = rng.random(n + big_n) < 0.25
    flip = rng.random(n + big_n) < 0.05
    judge = np.where(lenient, 1.0, np.where(flip, 1.0 - truth, truth))
    return truth[:n], judge[:n], judge[n:]


def _reference(y, yhat, yhat_u, lam, w=None, w_u=None):
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=lam, w=w, w_unlabeled=w_u)
    point = ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam, w=w, w_unlabeled=w_u)
    return float(np.squeeze(point)), float(np.squeeze(low)), float(np.squeeze(high))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("data", [_scores, _verdicts], ids=["mean", "pass_rate"])
@pytest.mark.parametrize("power_tuned", [True, False], ids=["ppi++", "ppi"])
def test_ppi_mean_agrees_with_ppi_py(seed, data, power_tuned):
    y, yhat, yhat_u = data(seed)
    ours = ppi_mean(y, yhat, yhat_u, power_tuned=power_tuned)
    point, low, high = _reference(y, yhat, yhat_u, lam=None if power_tuned else 1)
    assert ours.estimate == pytest.approx(point, abs=TOL, rel=0)
    assert ours.ci_low == pytest.approx(low, abs=TOL, rel=0)
    assert ours.ci_high == pytest.approx(high, abs=TOL, rel=0)
    assert ours.half_width == pytest.approx((high - low) / 2, abs=TOL, rel=0)
    c_low, c_high = classical_mean_ci(y, alpha=0.05)
    assert ours.classical_estimate == pytest.approx(y.mean(), abs=TOL, rel=0)
    assert ours.classical_ci_low == pytest.approx(float(c_low), abs=TOL, rel=0)
    assert ours.classical_ci_high == pytest.approx(float(c_high), abs=TOL, rel=0)
    if not power_tuned:
        assert ours.lam == 1.0


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("power_tuned", [True, False], ids=["ppi++", "ppi"])
def test_ppi_mean_with_weights_agrees_with_ppi_py(seed, power_tuned):
    y, yhat, yhat_u = _scores(seed)
    rng = np.random.default_rng(100 + seed)
    w, w_u = (
        rng.uniform(0.5, 2, size=y.shape[0]),
        rng.uniform(0.5, 2, size=yhat_u.shape[0]),
    )
    ours = ppi_mean(
        y, yhat, yhat_u, power_tuned=power_tuned, weights=w, weights_unlabeled=w_u
    )
    point, low, high = _reference(y, yhat, yhat_u, None if power_tuned else 1, w, w_u)
    assert (ours.estimate, ours.ci_low, ours.ci_high) == pytest.approx(
        (point, low, high), abs=TOL, rel=0
    )


def test_ppi_pass_rate_agrees_with_ppi_py_and_is_ppi_mean():
    y, yhat, yhat_u = _verdicts(7)
    rate = ppi_pass_rate(y, yhat, yhat_u)
    point, low, high = _reference(y, yhat, yhat_u, lam=None)
    assert (rate.estimate, rate.ci_low, rate.ci_high) == pytest.approx(
        (point, low, high), abs=TOL, rel=0
    )
    assert rate == ppi_mean(y, yhat, yhat_u)


def test_ppi_pass_rate_rejects_scores_that_are_not_verdicts():
    with pytest.raises(ValueError, match="0/1"):
        ppi_pass_rate([1, 0, 1], [0.7, 0, 1], [1, 0])


def test_power_tuning_is_never_wider_than_human_only_or_classical_ppi():
    for seed in SEEDS:
        for data in (_scores, _verdicts):
            y, yhat, yhat_u = data(seed)
            tuned = ppi_mean(y, yhat, yhat_u)
            plain = ppi_mean(y, yhat, yhat_u, power_tuned=False)
            assert 0.0 <= tuned.lam <= 1.0
            assert tuned.half_width <= tuned.classical_half_width + 1e-12
            assert tuned.half_width <= plain.half_width + 1e-12


def test_a_useless_judge_is_tuned_away_and_adds_no_labels():
    """A judge whose score has nothing to do with the label: λ near 0, so the
    interval is the human-only one (and classical PPI's is wider)."""
    rng = np.random.default_rng(11)
    y = (rng.random(300) < 0.5).astype(float)
    yhat, yhat_u = rng.random(300), rng.random(20_000)
    tuned = ppi_mean(y, yhat, yhat_u)
    assert tuned.lam < 0.15
    assert tuned.effective_labels == pytest.approx(300, rel=0.05)
    assert (
        ppi_mean(y, yhat, yhat_u, power_tuned=False).half_width
        > tuned.classical_half_width
    )


def test_effective_labels_is_n_times_the_variance_ratio():
    y, yhat, yhat_u = _scores(3)
    est = ppi_mean(y, yhat, yhat_u)
    expected = est.n * (est.classical_half_width / est.half_width) ** 2
    assert est.effective_labels == pytest.approx(expected, rel=1e-12)
    assert est.labels_added == pytest.approx(expected - est.n, rel=1e-12)
    assert est.labels_added > 0
    assert (est.n, est.N) == (150, 3000)


def test_a_perfect_judge_is_worth_at_most_every_result():
    """cov(y, ŷ) = 1/4 (ddof 0 over the 100 labelled), var(ŷ) = 1/4 · 1100/1099
    (ddof 1 over all 1100): λ = (1099/1100) / (1 + 100/1000)."""
    y = np.array([0.0, 1.0] * 50)
    est = ppi_mean(y, y, np.array([0.0, 1.0] * 500))
    assert est.lam == pytest.approx((1099 / 1100) / 1.1, rel=1e-12)
    assert est.effective_labels <= est.n + est.N


def test_a_constant_judge_falls_back_to_the_human_labels():
    y = np.array([1.0, 0.0, 1.0, 1.0])
    est = ppi_mean(y, np.ones(4), np.ones(50))
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(0.75)
    assert est.half_width == pytest.approx(est.classical_half_width)


def test_ppi_mean_refuses_fewer_than_two_labels():
    with pytest.raises(
        NotEnoughData, match="at least 2 human labels; it has 1: 1 more"
    ):
        ppi_mean([1.0], [1.0], [0.0, 1.0])


def test_ppi_mean_rejects_mismatched_or_missing_values():
    with pytest.raises(ValueError, match="3 human labels but 2 judge scores"):
        ppi_mean([1, 0, 1], [1, 0], [1, 1])
    with pytest.raises(ValueError, match="NaN"):
        ppi_mean([1, 0, math.nan], [1, 0, 1], [1, 1])
    with pytest.raises(NotEnoughData, match="without a human label"):
        ppi_mean([1, 0, 1], [1, 0, 1], [])


def test_paired_difference_is_ppi_on_the_per_item_differences():
    ya, fa, fa_u = _scores(1)
    yb, fb, fb_u = _scores(2)
    diff = ppi_paired_difference(ya, yb, fa, fb, fa_u, fb_u)
    point, low, high = _reference(ya - yb, fa - fb, fa_u - fb_u, lam=None)
    assert (diff.estimate, diff.ci_low, diff.ci_high) == pytest.approx(
        (point, low, high), abs=TOL, rel=0
    )
    assert diff.classical_estimate == pytest.approx(float(np.mean(ya - yb)))


def test_paired_difference_of_a_run_with_itself_is_exactly_zero():
    y, f, f_u = _scores(4)
    diff = ppi_paired_difference(y, y, f, f, f_u, f_u)
    assert (diff.estimate, diff.half_width) == (0.0, 0.0)


def test_ipw_estimate_by_hand():
    """Four items, items 0 and 2 labelled with π = 0.5 and 0.25, λ = 1:
    Z = ŷ + (y − ŷ)ξ/π = [0.8 + (1 − 0.8)·2, 0.4, 0.6 + (0 − 0.6)·4, 0.2]
      = [1.2, 0.4, −1.8, 0.2]; θ̂ = 0/4 = 0.0; human-only Horvitz–Thompson
    B = yξ/π = [2, 0, 0, 0], mean 0.5."""
    est = ppi_mean_ipw(
        [0.8, 0.4, 0.6, 0.2],
        [0.5, 0.5, 0.25, 0.25],
        [True, False, True, False],
        [1.0, 0.0],
        power_tuned=False,
    )
    z = np.array([1.2, 0.4, -1.8, 0.2])
    assert est.estimate == pytest.approx(0.0, abs=1e-12)
    assert est.std_error == pytest.approx(float(z.std()) / 2)
    assert est.classical_estimate == pytest.approx(0.5)
    assert (est.n, est.N, est.lam) == (2, 2, 1.0)


def test_ipw_with_every_item_labelled_is_the_plain_mean():
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    est = ppi_mean_ipw([0.9, 0.9, 0.9, 0.1, 0.1], np.ones(5), np.ones(5, dtype=bool), y)
    assert est.estimate == pytest.approx(0.6)
    assert est.lam == 0.0


def test_ipw_refuses_a_labelled_item_that_could_not_have_been_drawn():
    with pytest.raises(ValueError, match="positive where labelled"):
        ppi_mean_ipw([0.5, 0.5, 0.5], [0.0, 0.5, 0.5], [True, True, False], [1.0, 0.0])
    with pytest.raises(ValueError, match="2 items are marked labelled but 1"):
        ppi_mean_ipw([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [True, True, False], [1.0])
    with pytest.raises(NotEnoughData, match="1 more needed"):
        ppi_mean_ipw([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [True, False, False], [1.0])
