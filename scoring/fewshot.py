"""Few-shot examples from reviewers' corrections: which k of the results where a
human overruled the judge go into the judge's prompt.

The pick is balanced between "pass" and "fail" (a judge shown only failures learns to
fail) and diverse in text: greedy max-min on token Jaccard distance, so two
near-identical answers never both take a slot. Corrections with the reviewer's note
come first, because the note becomes the example's explanation. Deterministic: the
same corrections give the same examples.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

DEFAULT_K = 4
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Correction:
    """A result where the final human verdict differs from the judge's."""

    key: Hashable  # the result (or item) it comes from
    verdict: str  # the human verdict, "pass" or "fail"
    input: str = ""
    output: str = ""
    context: Sequence[str] = field(default_factory=tuple)
    explanation: str = ""  # the reviewer's note


def tokens(text: str) -> frozenset[str]:
    return frozenset(t.lower() for t in _TOKEN.findall(text))


def jaccard_distance(a: frozenset[str], b: frozenset[str]) -> float:
    """1 − |a ∩ b| / |a ∪ b|; two empty texts are identical (0)."""
    union = len(a | b)
    if union == 0:
        return 0.0
    return 1.0 - len(a & b) / union


def _quotas(k: int, passes: int, fails: int) -> tuple[int, int]:
    """Slots for pass and fail: half each, the odd one to the larger class, and a
    short class's unused slots to the other."""
    want_fail = (k + 1) // 2 if fails >= passes else k // 2
    want_pass = k - want_fail
    take_pass, take_fail = min(want_pass, passes), min(want_fail, fails)
    spare = k - take_pass - take_fail
    extra_pass = min(spare, passes - take_pass)
    take_pass += extra_pass
    take_fail += min(spare - extra_pass, fails - take_fail)
    return take_pass, take_fail


def propose_examples(
    corrections: Sequence[Correction], k: int = DEFAULT_K
) -> list[Correction]:
    """Up to k corrections, balanced between pass and fail, far apart in text."""
    if k < 0:
        raise ValueError("k must not be negative")
    for c in corrections:
        if c.verdict not in ("pass", "fail"):
            raise ValueError(f"a verdict is 'pass' or 'fail', not {c.verdict!r}")
    pools: dict[str, list[Correction]] = {"pass": [], "fail": []}
    for c in corrections:
        pools[c.verdict].append(c)
    for verdict, pool in pools.items():
        noted = [c for c in pool if c.explanation.strip()]
        # With enough noted ones the silent ones are left out; otherwise they fill in
        # after every noted one (the order below keeps noted first on ties).
        pools[verdict] = noted if len(noted) >= k else pool
    take_pass, take_fail = _quotas(k, len(pools["pass"]), len(pools["fail"]))
    quota = {"pass": take_pass, "fail": take_fail}
    text = {
        id(c): tokens(" ".join([c.input, c.output, *c.context]))
        for pool in pools.values()
        for c in pool
    }
    chosen: list[Correction] = []
    taken = {"pass": 0, "fail": 0}
    while taken["pass"] + taken["fail"] < take_pass + take_fail:
        # The class furthest behind its quota picks next, fail first on a tie.
        verdict = min(
            (v for v in ("fail", "pass") if taken[v] < quota[v]),
            key=lambda v: taken[v] / quota[v],
        )
        chosen_ids = {id(c) for c in chosen}
        best: Correction | None = None
        best_rank: tuple[float, int, int] | None = None
        for position, c in enumerate(pools[verdict]):
            if id(c) in chosen_ids:
                continue
            spread = min(
                (jaccard_distance(text[id(c)], text[id(o)]) for o in chosen),
                default=1.0,
            )
            rank = (spread, 1 if c.explanation.strip() else 0, -position)
            if best_rank is None or rank > best_rank:
                best, best_rank = c, rank
        assert best is not None  # the quotas never exceed the pools
        chosen.append(best)
        taken[verdict] += 1
    return chosen
