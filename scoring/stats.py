"""Paired significance for comparing two runs on matched items. Pure functions.

What the compare page states, and computes here:
- mean score delta: a 95 % paired t-interval on the per-item differences (Student t
  with n − 1 degrees of freedom) and its two-sided p-value (the paired t-test);
  `paired_t_from_sums` takes the count, sum and sum of squares of the differences,
  which SQL gives in one aggregate pass (no 100k-row loop);
- score changes: an exact two-sided sign test, items improved vs items regressed
  (unchanged items dropped);
- pass rate: an exact McNemar test, i.e. the same exact binomial test on the
  discordant pairs (fail → pass vs pass → fail).

Plain Python (math only), like agreement.py: the inputs are a handful of counts and
sums. The tests check every figure against published table values and exact
big-integer sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CONFIDENCE = 0.95
_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 10_000


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified
    Lentz, Numerical Recipes 6.4)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITER + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError("x must lie in [0, 1]")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log1p(-x)
    )
    # The fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry
    # I_x(a, b) = 1 − I_{1−x}(b, a) on the other side.
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be positive")
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_ppf(q: float, df: float) -> float:
    """The q-quantile of Student's t (0 < q < 1), by bisection on t_sf."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must lie in (0, 1)")
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -t_ppf(1.0 - q, df)
    target = 1.0 - q  # the upper tail beyond the quantile
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > target:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_sf(mid, df) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class PairedT:
    """Mean of paired differences with its confidence interval and t-test p-value.
    ci_low/ci_high/p_value are None below two pairs; with no spread at all the
    interval is the mean itself and p is 1 for a zero mean, else 0."""

    n: int
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    confidence: float = CONFIDENCE


def paired_t(differences: list[float], confidence: float = CONFIDENCE) -> PairedT:
    """paired_t_from_sums on a list of per-item differences."""
    return paired_t_from_sums(
        n=len(differences),
        total=math.fsum(differences),
        total_sq=math.fsum(d * d for d in differences),
        confidence=confidence,
    )


def paired_t_from_sums(
    *, n: int, total: float, total_sq: float, confidence: float = CONFIDENCE
) -> PairedT:
    """The paired t-interval and t-test from n, Σd and Σd² of the differences d."""
    if n == 0:
        return PairedT(0, None, None, None, None, None, confidence)
    mean = total / n
    if n < 2:
        return PairedT(n, mean, None, None, None, None, confidence)
    # Σ(d − mean)² = Σd² − n·mean²; rounding may leave a tiny negative.
    variance = max(0.0, (total_sq - n * mean * mean) / (n - 1))
    sd = math.sqrt(variance)
    se = sd / math.sqrt(n)
    if se <= 1e-12 * max(1.0, abs(mean)):
        p = 1.0 if abs(mean) <= 1e-12 else 0.0
        return PairedT(n, mean, sd, mean, mean, p, confidence)
    df = n - 1
    half = t_ppf(1.0 - (1.0 - confidence) / 2.0, df) * se
    p = min(1.0, 2.0 * t_sf(abs(mean) / se, df))
    return PairedT(n, mean, sd, mean - half, mean + half, p, confidence)


def binomial_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided p-value of k successes in n fair coin flips (p = 1/2):
    twice the smaller tail, capped at 1. 1.0 when n is 0."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError("need 0 ≤ k ≤ n")
    if n == 0:
        return 1.0
    low = min(k, n - k)
    if 2 * low == n:
        return 1.0
    log_half_n = n * math.log(0.5)
    log_n_fact = math.lgamma(n + 1)
    # Sum the tail from its largest term (i = low) down, stopping once terms no longer
    # change the sum: a tail of 100k flips costs a few hundred terms, not 50k.
    tail = 0.0
    for i in range(low, -1, -1):
        term = math.exp(
            log_n_fact - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n
        )
        tail += term
        if term < tail * 1e-17:
            break
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True)
class SignTest:
    """Exact two-sided sign test of `up` against `down` (ties left out)."""

    up: int
    down: int
    p_value: float

    @property
    def n(self) -> int:
        return self.up + self.down


def sign_test(up: int, down: int) -> SignTest:
    """Improved vs regressed items (or, for McNemar, fail→pass vs pass→fail pairs)."""
    if up < 0 or down < 0:
        raise ValueError("counts must not be negative")
    return SignTest(up, down, binomial_two_sided_p(up, up + down))


def mcnemar_exact(fail_to_pass: int, pass_to_fail: int) -> SignTest:
    """Exact McNemar test on paired pass/fail verdicts: the binomial test on the
    discordant pairs (items whose verdict agrees in both runs carry no information)."""
    return sign_test(fail_to_pass, pass_to_fail)
