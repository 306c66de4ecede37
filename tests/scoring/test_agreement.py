"""Agreement between reviewers, against hand-computed values and the `krippendorff`
package (the reference implementation)."""

from __future__ import annotations

import math
import random
from collections import Counter

import krippendorff
import numpy as np
import pytest
from scipy.stats import bootstrap

from scoring.agreement import (
    agreement_alpha,
    agreement_alpha_grouped,
    agreement_kappa_pairs,
    agreement_percent,
    agreement_percent_grouped,
    binary_agreement_from_counts,
    cohens_kappa,
    krippendorff_alpha,
    percent_agreement,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders, 12 units,
# None = not coded. Published: nominal 0.743, interval 0.849.
_ = None
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    "C": [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
}


def _ratings(by_coder: dict[str, list]) -> dict[int, dict[str, object]]:
    units: dict[int, dict[str, object]] = {}
    for coder, values in by_coder.items():
        for unit, value in enumerate(values):
            if value is not None:
                units.setdefault(unit, {})[coder] = value
    return units


def _reference(by_coder: dict[str, list], level: str) -> float:
    data = [
        [math.nan if v is None else v for v in values] for values in by_coder.values()
    ]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("interval", 0.849)]
)
def test_alpha_matches_the_published_example(level, published) -> None:
    ratings = _ratings(KRIPPENDORFF_2011)
    figure = agreement_alpha(ratings, level, resamples=200)
    assert round(figure.value, 3) == published
    assert figure.value == pytest.approx(_reference(KRIPPENDORFF_2011, level))
    # Unit 12 has one value: 11 items carry the figure.
    assert figure.items == 11
    assert figure.ci_low <= figure.value <= figure.ci_high


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_alpha_agrees_with_the_krippendorff_package_on_random_reviews(
    seed, level
) -> None:
    rng = random.Random(seed)
    coders = rng.randint(2, 5)
    units = rng.randint(3, 40)
    values = [0, 1] if level == "nominal" and seed % 2 else [0, 0.25, 0.5, 0.75, 1]
    by_coder = {
        f"r{c}": [
            rng.choice(values) if rng.random() < 0.7 else None for _ in range(units)
        ]
        for c in range(coders)
    }
    ratings = _ratings(by_coder)
    ours = krippendorff_alpha(
        [list(v.values()) for v in ratings.values() if len(v) > 1], level
    )
    try:
        reference = _reference(by_coder, level)
    except (ValueError, ZeroDivisionError):
        reference = math.nan
    if ours is None:
        # Undefined (nothing pairable, or one value only): the package says nan or fails.
        assert math.isnan(reference) or reference == pytest.approx(1.0)
    else:
        assert ours == pytest.approx(reference, abs=1e-9)


def test_cohens_kappa_by_hand() -> None:
    # 50 items: both pass 20, only the first passes 5, only the second 10, both fail 15.
    pairs = [("pass", "pass")] * 20 + [("pass", "fail")] * 5
    pairs += [("fail", "pass")] * 10 + [("fail", "fail")] * 15
    # p_o = 0.7; p_e = 0.5 x 0.6 + 0.5 x 0.4 = 0.5; kappa = 0.2 / 0.5.
    assert cohens_kappa(pairs) == pytest.approx(0.4)
    assert cohens_kappa([("pass", "pass")] * 3) is None  # no variation: undefined
    assert cohens_kappa([]) is None


def test_kappa_per_reviewer_pair_counts_the_items_they_share() -> None:
    ratings = {
        1: {"ann": "pass", "bob": "pass", "cy": "fail"},
        2: {"ann": "fail", "bob": "fail"},
        3: {"ann": "pass", "bob": "fail", "cy": "pass"},
        4: {"bob": "pass", "cy": "pass"},
    }
    pairs = agreement_kappa_pairs(ratings, resamples=100)
    assert set(pairs) == {("ann", "bob"), ("ann", "cy"), ("bob", "cy")}
    assert pairs[("ann", "bob")].items == 3
    assert pairs[("ann", "cy")].items == 2
    # ann/bob: 2 of 3 agree; ann (p,f,p) vs bob (p,f,f): p_e = 2/3*1/3 + 1/3*2/3 = 4/9.
    assert pairs[("ann", "bob")].value == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))


def test_percent_agreement_counts_pairs_within_items() -> None:
    # Pairs: (1,1) agree; (1,0) not; three pairs of 1s agree: 4 of 5.
    assert percent_agreement([[1, 1], [1, 0], [1, 1, 1]]) == pytest.approx(0.8)
    figure = agreement_percent(
        {"a": {"x": 1, "y": 1}, "b": {"x": 1}, "c": {"x": 0, "y": 1}}
    )
    assert figure.value == pytest.approx(0.5)
    assert figure.items == 2  # "b" has one review: no pair
    assert percent_agreement([]) is None


def test_intervals_are_seeded_and_narrow_with_more_items() -> None:
    rng = random.Random(3)
    small = {i: {"a": rng.choice("pf"), "b": rng.choice("pf")} for i in range(20)}
    large = {i: {"a": rng.choice("pf"), "b": rng.choice("pf")} for i in range(400)}
    first = agreement_percent(small, seed=1)
    assert agreement_percent(small, seed=1) == first
    wide = first.ci_high - first.ci_low
    narrow = agreement_percent(large, seed=1)
    assert narrow.ci_high - narrow.ci_low < wide


def _three_reviewers(rng: random.Random, n: int, *, scores: bool) -> dict:
    """n items, each rated by two or three of a, b, c, who mostly see the same."""
    ratings: dict[int, dict[str, object]] = {}
    for i in range(n):
        truth = rng.random()
        by = {}
        for reviewer in ("a", "b", "c"):
            if reviewer == "c" and rng.random() < 0.3:
                continue
            if scores:
                by[reviewer] = round(min(1.0, max(0.0, truth + rng.gauss(0, 0.2))), 2)
            else:
                by[reviewer] = (truth < 0.6) != (rng.random() < 0.15)
        ratings[i] = by
    return ratings


@pytest.mark.parametrize("figure", ["percent", "alpha", "alpha_interval", "kappa"])
def test_intervals_match_scipys_percentile_bootstrap(figure: str) -> None:
    """The intervals are the percentile bootstrap over items: scipy's, resampling
    the items themselves, gives the same ends (to the Monte Carlo error of 2,000
    resamples each: they differ by at most 0.004 here)."""
    rng = random.Random(11)
    ratings = _three_reviewers(rng, 300, scores=figure == "alpha_interval")
    if figure == "kappa":
        units: list = [
            (by["a"], by["b"]) for by in ratings.values() if {"a", "b"} <= set(by)
        ]
        ours = agreement_kappa_pairs(ratings, resamples=2000)[("a", "b")]
        point = cohens_kappa
    else:
        units = [list(by.values()) for by in ratings.values()]
        if figure == "percent":
            ours = agreement_percent(ratings, resamples=2000)
            point = percent_agreement
        else:
            level = "interval" if figure == "alpha_interval" else "nominal"
            ours = agreement_alpha(ratings, level, resamples=2000)

            def point(sample: list) -> float | None:
                return krippendorff_alpha(sample, level)

    reference = bootstrap(
        (np.arange(len(units)),),
        lambda index: point([units[i] for i in index]),
        vectorized=False,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(5),
    ).confidence_interval
    assert ours.ci_low == pytest.approx(reference.low, abs=0.01)
    assert ours.ci_high == pytest.approx(reference.high, abs=0.01)
    assert ours.ci_low < ours.value < ours.ci_high


@pytest.mark.parametrize("seed", range(30))
def test_binary_counts_match_the_expanded_figures(seed: int) -> None:
    rng = random.Random(seed)
    units = []
    for _ in range(rng.randint(1, 60)):
        m = rng.randint(1, 10)
        units.append([rng.random() < rng.random() for _ in range(m)])
    histogram: Counter[tuple[int, int]] = Counter(
        (sum(u), len(u) - sum(u)) for u in units
    )
    percent, alpha, items = binary_agreement_from_counts(histogram)
    pairable = [u for u in units if len(u) >= 2]
    assert items == len(pairable)
    expected_percent = percent_agreement(pairable)
    expected_alpha = krippendorff_alpha(pairable, "nominal")
    if expected_percent is None:
        assert percent is None
    else:
        assert percent == pytest.approx(expected_percent)
    if expected_alpha is None:
        assert alpha is None
    else:
        assert alpha == pytest.approx(expected_alpha)


def test_binary_counts_all_agree_or_single_raters() -> None:
    assert binary_agreement_from_counts({(3, 0): 5}) == (1.0, None, 5)
    assert binary_agreement_from_counts({(1, 0): 4, (0, 1): 2}) == (None, None, 0)
    percent, alpha, items = binary_agreement_from_counts({(1, 1): 2, (2, 0): 2})
    assert (percent, items) == (0.5, 4)
    assert alpha == pytest.approx(1 - 7 * 2 / (6 * 2))


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_grouped_figures_equal_the_ratings_figures(level) -> None:
    """Items given by shape (counted while read, as the agreement page does) give the
    figure, the items and the interval of the same items given one by one, and the
    reference package's alpha."""
    rng = random.Random(7)
    ratings: dict[int, dict[str, object]] = {}
    for unit in range(3000):
        coders = rng.sample(["a", "b", "c", "d"], rng.choice([1, 2, 3, 3, 4]))
        ratings[unit] = {c: rng.choice([1, 2, 2, 3]) for c in coders}
    shapes: Counter[tuple[object, ...]] = Counter()
    for by in ratings.values():
        # any order within an item, and single ratings: both left to the function
        shapes[tuple(rng.sample(list(by.values()), len(by)))] += 1
    assert agreement_alpha_grouped(shapes, level, resamples=300) == agreement_alpha(
        ratings, level, resamples=300
    )
    assert agreement_percent_grouped(shapes, resamples=300) == agreement_percent(
        ratings, resamples=300
    )
    by_coder = {
        c: [ratings[u].get(c) for u in range(3000)] for c in ("a", "b", "c", "d")
    }
    grouped = agreement_alpha_grouped(shapes, level, resamples=0)
    assert grouped.value == pytest.approx(_reference(by_coder, level))
