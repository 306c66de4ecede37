"""Pairwise preferences: win rates with Wilson score intervals.

A pairwise review asks reviewers which of two outputs for the same input is better
(A, B or a tie). The figures here take the answers' counts:

- a run's win rate over the decisive answers (ties left out), with a 95 % Wilson
  score interval: wins / (wins + losses). Ties are reported beside it, never folded
  in silently; `tie_half` gives the "ties count half" rate as well.
- the left/right bias: the share of decisive answers that chose the output shown on
  the left, with its Wilson interval (0.5 means no bias).

Each answer counts once. With several reviewers per pair the answers on one pair are
not independent, so the Wilson interval is narrower than it should be;
`win_rate_bootstrap` resamples pairs instead, for callers to show beside it.

Plain Python (no Django), like the rest of `scoring/`.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# The normal quantile for a two-sided 95 % interval.
Z95 = 1.959963984540054


def wilson_interval(
    successes: int, n: int, *, z: float = Z95
) -> tuple[float | None, float | None]:
    """The Wilson score interval of a binomial proportion; (None, None) when n is 0.

    centre = (p + z²/2n) / (1 + z²/n), half width = z √(p(1-p)/n + z²/4n²) / (1 + z²/n).
    """
    if n <= 0:
        return None, None
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class WinRate:
    """One side's record against the other: wins, losses and ties (answers)."""

    wins: int
    losses: int
    ties: int

    @property
    def answers(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def decisive(self) -> int:
        return self.wins + self.losses

    @property
    def rate(self) -> float | None:
        """Wins over decisive answers (ties excluded)."""
        return self.wins / self.decisive if self.decisive else None

    @property
    def interval(self) -> tuple[float | None, float | None]:
        return wilson_interval(self.wins, self.decisive)

    @property
    def tie_half(self) -> float | None:
        """(wins + ties / 2) / answers: the rate when a tie counts half a win."""
        return (self.wins + self.ties / 2) / self.answers if self.answers else None

    @property
    def tie_share(self) -> float | None:
        return self.ties / self.answers if self.answers else None


def win_rates(*, a: int, b: int, tie: int) -> tuple[WinRate, WinRate]:
    """Run A's and run B's records from the answers' counts."""
    if min(a, b, tie) < 0:
        raise ValueError("counts cannot be negative")
    return WinRate(wins=a, losses=b, ties=tie), WinRate(wins=b, losses=a, ties=tie)


def win_rate_bootstrap(
    pairs: Sequence[tuple[int, int]],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """95 % percentile interval of run A's win rate (ties left out) with the pairs,
    not the answers, resampled: `pairs` holds each pair's (A wins, B wins). With
    several reviewers per pair their answers are not independent, and this interval
    accounts for it where the Wilson interval over answers does not.

    Pairs are grouped by shape, so a resample costs the number of distinct shapes.
    (None, None) with fewer than two pairs, or when most resamples hold no decisive
    answer.
    """
    if len(pairs) < 2 or resamples <= 0:
        return None, None
    shapes = Counter(pairs)
    keys = list(shapes)
    index = {shape: i for i, shape in enumerate(keys)}
    ids = [index[p] for p in pairs]
    rng = random.Random(seed)
    found = []
    for _ in range(resamples):
        counts = Counter(rng.choices(ids, k=len(ids)))
        wins = sum(keys[i][0] * c for i, c in counts.items())
        decisive = wins + sum(keys[i][1] * c for i, c in counts.items())
        if decisive:
            found.append(wins / decisive)
    if len(found) < resamples // 2:
        return None, None
    found.sort()
    return found[int(0.025 * (len(found) - 1))], found[int(0.975 * (len(found) - 1))]
