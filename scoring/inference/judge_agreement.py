"""How well a judge's pass/fail agrees with the humans' on the same items, each figure
with a 95 % interval: percent agreement, Cohen's kappa, precision and recall of
"fail" (the class a lead looks for), and the confusion matrix.

Proportions get the Wilson score interval (good coverage down to a few dozen items,
never outside [0, 1]); kappa gets the large-sample standard error of Fleiss, Cohen &
Everitt (1969), the one statsmodels reports as `std_kappa`, clipped to [-1, 1]. The
tests check the figures against scikit-learn and statsmodels and the intervals'
coverage by simulation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    """A figure with its 95 % interval; all None when the data cannot define it."""

    value: float | None
    low: float | None
    high: float | None
    numerator: int = 0
    denominator: int = 0


NONE = Interval(None, None, None)


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval of a proportion successes / n."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError("need 0 <= successes <= n")
    if n == 0:
        return Interval(None, None, None, successes, n)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), successes, n)


@dataclass(frozen=True)
class Confusion:
    """Judge against human on the same items. The cells name the judge first:
    `fail_fail` = judge fail & human fail, `pass_fail` = judge pass & human fail."""

    pass_pass: int = 0
    pass_fail: int = 0
    fail_pass: int = 0
    fail_fail: int = 0

    @property
    def n(self) -> int:
        return self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[bool, bool]]) -> Confusion:
        """From (judge_passed, human_passed) pairs."""
        cells = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
        for judge, human in pairs:
            cells[(bool(judge), bool(human))] += 1
        return cls(
            pass_pass=cells[(True, True)],
            pass_fail=cells[(True, False)],
            fail_pass=cells[(False, True)],
            fail_fail=cells[(False, False)],
        )


def kappa_interval(confusion: Confusion, z: float = Z95) -> Interval:
    """Cohen's kappa of judge vs human with its large-sample interval.

    None when it is undefined: no items, or chance agreement of 1 (judge and humans
    each gave one and the same answer to every item, so there is nothing to beat).
    """
    n = confusion.n
    if n == 0:
        return NONE
    # p[judge][human], index 0 = pass, 1 = fail
    p = [
        [confusion.pass_pass / n, confusion.pass_fail / n],
        [confusion.fail_pass / n, confusion.fail_fail / n],
    ]
    rows = [p[0][0] + p[0][1], p[1][0] + p[1][1]]
    cols = [p[0][0] + p[1][0], p[0][1] + p[1][1]]
    observed = p[0][0] + p[1][1]
    expected = rows[0] * cols[0] + rows[1] * cols[1]
    if expected >= 1.0 - 1e-15:
        return Interval(None, None, None, n, n)
    kappa = (observed - expected) / (1 - expected)
    # Fleiss, Cohen & Everitt (1969), eq. 13: the variance under the alternative.
    a = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(2))
    b = (1 - kappa) ** 2 * sum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j
    )
    c = (kappa - expected * (1 - kappa)) ** 2
    variance = max(0.0, (a + b - c) / (n * (1 - expected) ** 2))
    half = z * math.sqrt(variance)
    return Interval(kappa, max(-1.0, kappa - half), min(1.0, kappa + half), n, n)


@dataclass(frozen=True)
class JudgeAgreement:
    """Every figure of one judge version against the humans on the same items."""

    confusion: Confusion
    agreement: Interval
    kappa: Interval
    fail_precision: Interval  # of the judge's fails, the share humans failed too
    fail_recall: Interval  # of the humans' fails, the share the judge caught
    cells: dict[str, Interval]  # each confusion cell as a share of the items

    @property
    def n(self) -> int:
        return self.confusion.n


def judge_agreement(confusion: Confusion) -> JudgeAgreement:
    c = confusion
    n = c.n
    return JudgeAgreement(
        confusion=c,
        agreement=wilson(c.pass_pass + c.fail_fail, n),
        kappa=kappa_interval(c),
        fail_precision=wilson(c.fail_fail, c.fail_fail + c.fail_pass),
        fail_recall=wilson(c.fail_fail, c.fail_fail + c.pass_fail),
        cells={
            "pass_pass": wilson(c.pass_pass, n),
            "pass_fail": wilson(c.pass_fail, n),
            "fail_pass": wilson(c.fail_pass, n),
            "fail_fail": wilson(c.fail_fail, n),
        },
    )
