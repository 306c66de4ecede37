"""The judge lab's statistics against scikit-learn and statsmodels, and the coverage
of their intervals by simulation."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from scoring.inference.judge_agreement import (
    Confusion,
    judge_agreement,
    kappa_interval,
    wilson,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
proportion = pytest.importorskip("statsmodels.stats.proportion")


def _pairs(rng: random.Random, n: int, p_human_pass: float, accuracy: float):
    out = []
    for _ in range(n):
        human = rng.random() < p_human_pass
        judge = human if rng.random() < accuracy else not human
        out.append((judge, human))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_kappa_and_its_error_equal_the_reference_packages(seed: int) -> None:
    rng = random.Random(seed)
    pairs = _pairs(rng, rng.randint(20, 400), rng.uniform(0.2, 0.8), 0.8)
    confusion = Confusion.from_pairs(pairs)
    got = kappa_interval(confusion)
    judge = [int(j) for j, _ in pairs]
    human = [int(h) for _, h in pairs]
    assert got.value == pytest.approx(sklearn_metrics.cohen_kappa_score(judge, human))
    table = np.array(
        [
            [confusion.pass_pass, confusion.pass_fail],
            [confusion.fail_pass, confusion.fail_fail],
        ]
    )
    ref = inter_rater.cohens_kappa(table)
    assert got.value == pytest.approx(ref.kappa)
    assert got.high - got.value == pytest.approx(1.959963984540054 * ref.std_kappa)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (37, 120), (1, 1)])
def test_wilson_equals_statsmodels(k: int, n: int) -> None:
    low, high = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
    got = wilson(k, n)
    assert got.value == k / n
    assert got.low == pytest.approx(low, abs=1e-12)
    assert got.high == pytest.approx(high, abs=1e-12)


def test_precision_and_recall_of_fail_against_sklearn() -> None:
    rng = random.Random(7)
    pairs = _pairs(rng, 300, 0.6, 0.75)
    figures = judge_agreement(Confusion.from_pairs(pairs))
    judge = ["fail" if not j else "pass" for j, _ in pairs]
    human = ["fail" if not h else "pass" for _, h in pairs]
    assert figures.fail_precision.value == pytest.approx(
        sklearn_metrics.precision_score(human, judge, pos_label="fail")
    )
    assert figures.fail_recall.value == pytest.approx(
        sklearn_metrics.recall_score(human, judge, pos_label="fail")
    )
    assert figures.agreement.value == pytest.approx(
        sklearn_metrics.accuracy_score(human, judge)
    )
    matrix = sklearn_metrics.confusion_matrix(human, judge, labels=["pass", "fail"])
    # sklearn: rows = truth (human), columns = prediction (judge)
    c = figures.confusion
    assert [[c.pass_pass, c.fail_pass], [c.pass_fail, c.fail_fail]] == matrix.tolist()
    assert sum(cell.value for cell in figures.cells.values()) == pytest.approx(1.0)


def test_undefined_figures_are_none_not_zero() -> None:
    assert kappa_interval(Confusion()).value is None
    # every item pass for both: chance agreement is 1
    assert kappa_interval(Confusion(pass_pass=5)).value is None
    figures = judge_agreement(Confusion(pass_pass=5))
    assert figures.fail_precision.value is None  # the judge never failed
    assert figures.fail_recall.value is None  # the humans never failed
    assert figures.agreement.value == 1.0
    with pytest.raises(ValueError):
        wilson(3, 2)


def _coverage(draw, truth: float, trials: int) -> float:
    hits = 0
    for _ in range(trials):
        interval = draw()
        if interval.low is not None and interval.low <= truth <= interval.high:
            hits += 1
    return hits / trials


def test_kappa_interval_covers_the_true_kappa_about_95_percent() -> None:
    # human pass 0.6, judge right 85 % of the time, errors symmetric
    p_h, acc = 0.6, 0.85
    p_pp, p_ff = p_h * acc, (1 - p_h) * acc
    p_pf, p_fp = (1 - p_h) * (1 - acc), p_h * (1 - acc)
    rows = (p_pp + p_pf, p_fp + p_ff)
    cols = (p_pp + p_fp, p_pf + p_ff)
    pe = rows[0] * cols[0] + rows[1] * cols[1]
    true_kappa = (acc - pe) / (1 - pe)
    gen = np.random.default_rng(11)

    def draw():
        pp, pf, fp, ff = gen.multinomial(200, [p_pp, p_pf, p_fp, p_ff])
        return kappa_interval(Confusion(int(pp), int(pf), int(fp), int(ff)))

    coverage = _coverage(draw, true_kappa, 2000)
    # 2,000 trials: a 95 % interval lands within ±1.5 points of 95 % (3 SE ≈ 1.5).
    assert 0.935 <= coverage <= 0.965, coverage


def test_wilson_interval_covers_about_95_percent() -> None:
    gen = np.random.default_rng(3)
    truth = 0.3
    coverage = _coverage(lambda: wilson(int(gen.binomial(80, truth)), 80), truth, 3000)
    assert 0.93 <= coverage <= 0.97, coverage
    assert not math.isnan(coverage)
