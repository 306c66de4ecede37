"""scoring.inference.planning and scoring.inference.designs."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.inference import (
    NotEnoughData,
    active_design,
    draw_sample,
    labels_needed,
    minimum_detectable_difference,
    ppi_mean,
    split_uncertainty,
    spread_uncertainty,
    stratified_design,
    threshold_uncertainty,
    uniform_design,
    z_quantile,
)


def _population(seed, size=20_000, noise=0.8):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=size).astype(float)
    judge = truth + 0.3 + rng.normal(0, noise, size=size)
    return truth, judge


def _split(truth, judge, n):
    return truth[:n], judge[:n], judge[n:]


def test_labels_needed_for_todays_half_width_is_none():
    y, f, f_u = _split(*_population(1), 150)
    today = ppi_mean(y, f, f_u).half_width
    plan = labels_needed(y, f, f_u, half_width=today * (1 + 1e-9))
    assert (plan.n, plan.n_required, plan.additional, plan.reachable) == (
        150,
        150,
        0,
        True,
    )
    assert labels_needed(y, f, f_u, half_width=today * 0.999).additional == 1


def test_labels_needed_delivers_the_half_width_it_promises():
    """Plan from 150 labels, then label as many as planned from the same population:
    the interval comes out at the target, give or take the noise of 150 labels in the
    plan's variances."""
    truth, judge = _population(2)
    y, f, f_u = _split(truth, judge, 150)
    plan = labels_needed(y, f, f_u, half_width=0.05)
    assert plan.reachable and plan.additional > 0
    got = ppi_mean(*_split(truth, judge, plan.n_required)).half_width
    assert got == pytest.approx(0.05, rel=0.1)


def test_labels_needed_grows_with_a_worse_judge_and_a_tighter_target():
    a = labels_needed(*_split(*_population(3, noise=0.5), 150), half_width=0.04)
    b = labels_needed(*_split(*_population(3, noise=1.5), 150), half_width=0.04)
    c = labels_needed(*_split(*_population(3, noise=1.5), 150), half_width=0.03)
    assert a.n_required < b.n_required < c.n_required


def test_labels_needed_says_when_even_every_result_is_not_enough():
    y, f, f_u = _split(*_population(4, size=500), 100)
    plan = labels_needed(y, f, f_u, half_width=0.001)
    assert (plan.reachable, plan.n_required, plan.additional) == (False, None, None)


def test_labels_needed_for_a_difference_uses_the_power():
    """Detecting d with power 0.8 at α = 0.05 needs se ≤ d / (1.95996 + 0.84162)."""
    y, f, f_u = _split(*_population(5), 150)
    plan = labels_needed(y, f, f_u, difference=-0.1)
    assert plan.target_std_error == pytest.approx(
        0.1 / (z_quantile(0.05) + 0.8416212335729143)
    )
    assert (
        plan.n_required
        == labels_needed(
            y, f, f_u, half_width=plan.target_std_error * z_quantile(0.05)
        ).n_required
    )


def test_labels_needed_wants_exactly_one_target_and_two_labels():
    y, f, f_u = _split(*_population(6), 50)
    with pytest.raises(ValueError, match="exactly one"):
        labels_needed(y, f, f_u)
    with pytest.raises(ValueError, match="exactly one"):
        labels_needed(y, f, f_u, half_width=0.1, difference=0.1)
    with pytest.raises(NotEnoughData, match="1 more needed"):
        labels_needed(y[:1], f[:1], f_u, half_width=0.1)


def test_minimum_detectable_difference_is_the_standard_error_times_z_sum():
    y, f, f_u = _split(*_population(7), 200)
    est = ppi_mean(y, f, f_u)
    mdd = minimum_detectable_difference(y, f, f_u)
    factor = z_quantile(0.05) + 0.8416212335729143
    assert mdd.ppi == pytest.approx(factor * est.std_error, rel=1e-9)
    assert mdd.classical == pytest.approx(factor * est.classical_std_error, rel=1e-9)
    assert mdd.ppi < mdd.classical
    # At the planned n the minimum detectable difference is what was asked for.
    plan = labels_needed(y, f, f_u, difference=mdd.ppi * (1 + 1e-9))
    assert plan.additional == 0


def test_uniform_design_spends_the_budget_evenly():
    pi = uniform_design(400, 100)
    assert np.all(pi == 0.25)
    assert np.all(uniform_design(10, 50) == 1.0)


def test_stratified_design_gives_each_stratum_the_same_expected_labels():
    strata = ["pass"] * 900 + ["fail"] * 100
    pi = stratified_design(strata, 100)
    assert pi[:900].sum() == pytest.approx(50)
    assert pi[900:].sum() == pytest.approx(50)
    assert np.all(stratified_design(strata, 100, allocation="proportional") == 0.1)


def test_stratified_design_labels_a_small_stratum_in_full_and_moves_the_rest():
    strata = ["a"] * 1000 + ["b"] * 1000 + ["c"] * 10
    pi = stratified_design(strata, 300)
    assert np.all(pi[2000:] == 1.0)
    assert pi[:1000].sum() == pytest.approx(145)
    assert pi[1000:2000].sum() == pytest.approx(145)


def test_active_design_follows_uncertainty_with_a_floor_and_the_budget():
    u = np.array([0.0] * 90 + [1.0] * 10)
    pi = active_design(u, 20, floor=0.2)
    assert pi.sum() == pytest.approx(20)
    assert pi.max() <= 1.0
    uniform = 20 / 100
    # The sure results keep at least floor × the uniform probability.
    assert pi[:90].min() >= 0.2 * uniform - 1e-12
    assert pi[90:].min() > pi[:90].max()


def test_active_design_caps_at_one_and_redistributes():
    u = np.array([10.0] * 5 + [0.1] * 95)
    pi = active_design(u, 30, floor=0.1)
    assert np.all(pi[:5] == 1.0)
    assert pi.sum() == pytest.approx(30)
    assert np.allclose(pi[5:], 25 / 95)


def test_active_design_without_uncertainty_is_uniform_and_rejects_bad_input():
    assert np.allclose(active_design(np.zeros(50), 10), 0.2)
    with pytest.raises(ValueError, match="non-negative"):
        active_design([0.5, -0.1], 1)
    with pytest.raises(ValueError, match="floor"):
        active_design([0.5, 0.1], 1, floor=0)
    with pytest.raises(ValueError, match="budget"):
        uniform_design(10, 0)


def test_uncertainty_helpers():
    assert np.allclose(split_uncertainty([0.0, 0.5, 0.8, 1.0]), [0.0, 1.0, 0.4, 0.0])
    assert np.allclose(
        threshold_uncertainty([3.0, 3.5, 5.0], 3.0, 1.0), [1.0, 0.5, 0.0]
    )
    # Samples on 1..5: unanimous; split between the ends; one of four off by 2 (sd √3/2).
    spread = spread_uncertainty([[4, 4, 4, 4], [1, 5, 1, 5], [3, 3, 3, 5]], 1, 5)
    assert np.allclose(spread, [0.0, 1.0, np.sqrt(3) / 2 / 2])
    with pytest.raises(ValueError, match="one row per result"):
        spread_uncertainty([1, 2, 3], 1, 5)


def test_draw_sample_draws_the_expected_number_of_labels():
    rng = np.random.default_rng(0)
    pi = active_design(np.linspace(0, 1, 10_000), 1000)
    sizes = [int(draw_sample(pi, rng).sum()) for _ in range(50)]
    assert np.mean(sizes) == pytest.approx(1000, rel=0.02)
