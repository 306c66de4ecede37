from __future__ import annotations

import pytest

from scoring.fewshot import (
    Correction,
    jaccard_distance,
    propose_examples,
    tokens,
)


def _c(key: int, verdict: str, output: str, note: str = "a note") -> Correction:
    return Correction(key=key, verdict=verdict, output=output, explanation=note)


def test_balanced_between_pass_and_fail() -> None:
    pool = [_c(i, "fail", f"fail text number {i}") for i in range(10)]
    pool += [_c(100 + i, "pass", f"pass words item {i}") for i in range(3)]
    chosen = propose_examples(pool, k=4)
    assert sorted(c.verdict for c in chosen) == ["fail", "fail", "pass", "pass"]
    odd = propose_examples(pool, k=5)
    assert [c.verdict for c in odd].count(
        "fail"
    ) == 3  # the larger class gets the odd one


def test_a_short_class_leaves_its_slots_to_the_other() -> None:
    pool = [_c(i, "fail", f"alpha {i} beta") for i in range(6)] + [
        _c(9, "pass", "gamma")
    ]
    chosen = propose_examples(pool, k=4)
    assert [c.verdict for c in chosen].count("pass") == 1
    assert len(chosen) == 4
    assert propose_examples(pool[:2], k=4) == propose_examples(pool[:2], k=2)
    assert propose_examples([], k=4) == []


def test_near_duplicates_never_both_chosen() -> None:
    same = "the capital of france is paris and it is large"
    pool = [
        _c(1, "fail", same),
        _c(2, "fail", same + " indeed"),
        _c(3, "fail", "quantum chromodynamics describes quarks"),
        _c(4, "fail", "bananas are yellow fruit"),
    ]
    chosen = propose_examples(pool, k=3)
    keys = {c.key for c in chosen}
    assert keys == {1, 3, 4}  # 1 first (every distance 1, earliest), then the far ones


def test_noted_corrections_preferred_and_the_pick_is_deterministic() -> None:
    pool = [
        _c(i, "pass", f"word{i} shared", note="" if i % 2 else "why") for i in range(8)
    ]
    chosen = propose_examples(pool, k=2)
    assert all(c.explanation for c in chosen)
    assert propose_examples(pool, k=2) == chosen


def test_jaccard() -> None:
    assert jaccard_distance(tokens("A b c"), tokens("a B c")) == 0.0
    assert jaccard_distance(tokens("a b"), tokens("c d")) == 1.0
    assert jaccard_distance(tokens("a b c"), tokens("a b d")) == pytest.approx(0.5)
    assert jaccard_distance(frozenset(), frozenset()) == 0.0


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        propose_examples([_c(1, "maybe", "x")])
    with pytest.raises(ValueError):
        propose_examples([], k=-1)
