"""Paired statistics for compare, against published table values and exact sums."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from scoring.stats import (
    betainc,
    binomial_two_sided_p,
    mcnemar_exact,
    paired_t,
    paired_t_from_sums,
    sign_test,
    t_ppf,
    t_sf,
)


@pytest.mark.parametrize(
    ("a", "b", "x", "expected"),
    [
        (2, 3, 0.5, 11 / 16),  # P(Bin(4, .5) >= 2)
        (1, 1, 0.3, 0.3),  # uniform
        (5, 5, 0.5, 0.5),  # symmetry
        (
            3,
            7,
            0.2,
            1 - sum(math.comb(9, i) * 0.2**i * 0.8 ** (9 - i) for i in range(3)),
        ),
    ],
)
def test_betainc_matches_binomial_tails(a, b, x, expected):
    assert betainc(a, b, x) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("df", "quantile"),
    [
        (1, 12.7062047362),
        (4, 2.7764451052),
        (10, 2.2281388520),
        (30, 2.0422724563),
        (1000, 1.9623390808),
        (100_000, 1.95998771),  # z + (z³ + z) / 4df,
    ],
)
def test_t_ppf_matches_the_t_table(df, quantile):
    assert t_ppf(0.975, df) == pytest.approx(quantile, rel=1e-7)
    assert t_ppf(0.025, df) == pytest.approx(-quantile, rel=1e-7)
    assert t_sf(quantile, df) == pytest.approx(0.025, rel=1e-7)


def test_t_sf_known_values():
    assert t_sf(0.0, 7) == pytest.approx(0.5)
    assert t_sf(1.0, 1) == pytest.approx(0.25)  # Cauchy: atan(1)/pi from the top
    assert t_sf(-1.0, 1) == pytest.approx(0.75)


def test_paired_t_interval_by_hand():
    # d = 1..5: mean 3, sd sqrt(2.5), se sqrt(0.5); t(0.975, 4) = 2.7764451052
    result = paired_t([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451052 * math.sqrt(0.5)
    assert result.n == 5 and result.mean == pytest.approx(3.0)
    assert result.sd == pytest.approx(math.sqrt(2.5))
    assert (result.ci_low, result.ci_high) == (
        pytest.approx(3 - half),
        pytest.approx(3 + half),
    )
    # two-sided p of t = 3 / sqrt(0.5) = 4.2426 with 4 df
    assert result.p_value == pytest.approx(2 * t_sf(3 / math.sqrt(0.5), 4))
    assert 0.01 < result.p_value < 0.015


def test_paired_t_from_sums_equals_the_list_version():
    diffs = [0.5, -0.25, 0.0, 1.0, -1.0, 0.75]
    by_list = paired_t(diffs)
    by_sums = paired_t_from_sums(
        n=len(diffs), total=sum(diffs), total_sq=sum(d * d for d in diffs)
    )
    assert by_list == by_sums


def test_paired_t_degenerate_cases():
    assert paired_t([]).mean is None and paired_t([]).p_value is None
    one = paired_t([0.4])
    assert one.mean == pytest.approx(0.4) and one.ci_low is None
    flat = paired_t([0.0] * 10)
    assert (flat.ci_low, flat.ci_high, flat.p_value) == (0.0, 0.0, 1.0)
    shifted = paired_t([0.5] * 10)
    assert shifted.p_value == 0.0 and shifted.ci_low == pytest.approx(0.5)


def _exact_two_sided(k: int, n: int) -> float:
    low = min(k, n - k)
    tail = Fraction(sum(math.comb(n, i) for i in range(low + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(
    ("k", "n"),
    [(0, 10), (2, 10), (1, 5), (5, 10), (3, 7), (950, 2000), (4800, 10_000)],
)
def test_binomial_two_sided_p_is_exact(k, n):
    assert binomial_two_sided_p(k, n) == pytest.approx(_exact_two_sided(k, n), rel=1e-9)


def test_binomial_known_values_and_bad_input():
    assert binomial_two_sided_p(0, 10) == pytest.approx(2 / 1024)
    assert binomial_two_sided_p(2, 10) == pytest.approx(112 / 1024)
    assert binomial_two_sided_p(0, 0) == 1.0
    with pytest.raises(ValueError):
        binomial_two_sided_p(5, 4)


def test_sign_test_and_mcnemar():
    result = sign_test(8, 2)
    assert (result.up, result.down, result.n) == (8, 2, 10)
    assert result.p_value == pytest.approx(112 / 1024)
    assert mcnemar_exact(0, 0).p_value == 1.0
    assert mcnemar_exact(1, 9) == sign_test(1, 9)
    with pytest.raises(ValueError):
        sign_test(-1, 3)


def test_binomial_large_n_is_fast_and_tiny():
    p = binomial_two_sided_p(49_000, 100_000)
    assert 0 < p < 1e-9
