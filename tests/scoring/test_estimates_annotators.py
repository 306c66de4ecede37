"""scoring.inference.annotators: the alternative annotator test."""

from __future__ import annotations

import math

import pytest

from scoring.inference import (
    NotEnoughAnnotations,
    alternative_annotator_test,
    benjamini_yekutieli,
)


def _t3_lower_tail(t):
    """P(T ≤ t) for Student's t with 3 degrees of freedom, in closed form:
    1/2 + (x / (1 + x²) + atan x) / π with x = t / √3."""
    x = t / math.sqrt(3)
    return 0.5 + (x / (1 + x * x) + math.atan(x)) / math.pi


HUMANS = {
    "i1": {"A": 1, "B": 1, "C": 1},
    "i2": {"A": 1, "B": 0, "C": 0},
    "i3": {"A": 0, "B": 0, "C": 1},
    "i4": {"A": 1, "B": 1, "C": 0},
}
JUDGE = {"i1": 1, "i2": 0, "i3": 0, "i4": 1}


def test_alternative_annotator_test_reproduces_the_hand_computed_case():
    """Alignment = share of the other reviewers the answer equals; d = W_human − W_judge.

    A left out (others B, C): i1 judge 1, A 1 → d 0; i2 (0, 0): judge 1, A 0 → d −1;
      i3 (0, 1): ½, ½ → 0; i4 (1, 0): ½, ½ → 0. d = [0, −1, 0, 0]: mean −¼,
      sd ½, se ¼, t = (−¼ − 0.1)/¼ = −1.4; p = P(T₃ ≤ −1.4) ≈ 0.128; ρ_judge 1, ρ_human ¾.
    B left out (others A, C): ½ vs ½ or 1 vs 1 on every item, d = 0 everywhere: no
      spread and mean 0 < ε, p = 0; ρ_judge = ρ_human = 1.
    C left out (others A, B): i1 1 vs 1; i2 ½ vs ½; i3 (0, 0): judge 1, C 0 → d −1;
      i4 (1, 1): judge 1, C 0 → d −1. d = [0, 0, −1, −1]: mean −½, sd √(1/3),
      se √(1/12), t = −0.6 · √12 ≈ −2.078; p ≈ 0.065; ρ_judge 1, ρ_human ½.
    Benjamini–Yekutieli, m = 3, c(3) = 11/6, α = 0.05: thresholds k · 0.05 / 5.5 =
      0.0091, 0.0182, 0.0273 for the sorted p (0, 0.065, 0.128): only B's null is
      rejected. ω = 1/3 < 0.5: the judge may not replace a reviewer.
    """
    result = alternative_annotator_test(JUDGE, HUMANS, min_items=4)
    by = {o.reviewer: o for o in result.reviewers}
    assert by["A"].t == pytest.approx(-1.4)
    assert by["A"].p_value == pytest.approx(_t3_lower_tail(-1.4), abs=1e-9)
    assert (by["A"].rho_judge, by["A"].rho_human) == (1.0, 0.75)
    assert (by["B"].t, by["B"].p_value) == (-math.inf, 0.0)
    assert by["C"].t == pytest.approx(-0.6 * math.sqrt(12))
    assert by["C"].p_value == pytest.approx(
        _t3_lower_tail(-0.6 * math.sqrt(12)), abs=1e-9
    )
    assert (by["C"].rho_judge, by["C"].rho_human) == (1.0, 0.5)
    assert [by[r].rejected for r in "ABC"] == [False, True, False]
    assert result.winning_rate == pytest.approx(1 / 3)
    assert result.passed is False
    assert result.advantage == 1.0
    assert (result.items, result.skipped, result.few_reviewers) == (4, (), False)


def test_a_looser_alpha_lets_the_same_judge_pass():
    """α = 0.5: thresholds k · 0.5 / 5.5 = 0.091, 0.182, 0.273 admit all three p."""
    result = alternative_annotator_test(JUDGE, HUMANS, alpha=0.5, min_items=4)
    assert result.winning_rate == 1.0
    assert result.passed is True


def test_numeric_scores_align_by_distance():
    """Two reviewers, scores; alignment = −RMS distance to the other reviewer.
    A left out (other B): item x judge |3 − 3| = 0 beats A's |5 − 3| = 2, item y ties
    (0 and 0): ρ_judge 1, ρ_human ½. B left out (other A): item x |3 − 5| = 2 for
    both, item y ties: ρ_judge = ρ_human = 1."""
    humans = {"x": {"A": 5.0, "B": 3.0}, "y": {"A": 2.0, "B": 2.0}}
    judge = {"x": 3.0, "y": 2.0}
    result = alternative_annotator_test(judge, humans, scale="numeric", min_items=2)
    by = {o.reviewer: o for o in result.reviewers}
    assert (by["A"].rho_judge, by["A"].rho_human) == (1.0, 0.5)
    assert (by["B"].rho_judge, by["B"].rho_human) == (1.0, 1.0)
    assert result.few_reviewers is True


def test_numeric_scale_refuses_labels_that_are_not_numbers():
    with pytest.raises(TypeError, match="numbers"):
        alternative_annotator_test(
            {"x": "good", "y": "bad"},
            {"x": {"A": "good", "B": "bad"}, "y": {"A": "bad", "B": "bad"}},
            scale="numeric",
            min_items=2,
        )


def test_refuses_when_no_result_has_two_human_answers():
    humans = {f"i{k}": {"A": 1} for k in range(50)}
    judge = {f"i{k}": 1 for k in range(50)}
    with pytest.raises(NotEnoughAnnotations, match="at least 2 human answers") as info:
        alternative_annotator_test(judge, humans)
    assert info.value.more_reviewers == 2


def test_refuses_and_says_how_many_more_results_each_reviewer_needs():
    """A and B share 12 results, C answered 5 of them: none reaches 30."""
    humans = {f"i{k}": {"A": 1, "B": k % 2} for k in range(12)}
    for k in range(5):
        humans[f"i{k}"]["C"] = 0
    judge = dict.fromkeys(humans, 1)
    with pytest.raises(NotEnoughAnnotations) as info:
        alternative_annotator_test(judge, humans)
    assert info.value.more_items == {"A": 18, "B": 18}
    assert info.value.more_reviewers == 0
    assert "A needs 18 more; B needs 18 more" in str(info.value)
    assert "0 qualify" in str(info.value)


def test_refuses_with_one_qualifying_reviewer_and_names_the_missing_one():
    """A answered 40 results, each with one of many one-off reviewers: A qualifies,
    the others have one result each; the best of them still needs 29."""
    humans = {f"i{k}": {"A": 1, f"R{k}": 1} for k in range(40)}
    judge = dict.fromkeys(humans, 1)
    with pytest.raises(NotEnoughAnnotations, match="1 qualify") as info:
        alternative_annotator_test(judge, humans)
    assert list(info.value.more_items.values()) == [29]


def test_reviewers_with_too_few_results_are_skipped_and_listed():
    humans = {f"i{k}": {"A": k % 2, "B": k % 2} for k in range(30)}
    humans["i0"]["C"] = 0
    judge = {item: humans[item]["A"] for item in humans}
    result = alternative_annotator_test(judge, humans)
    assert [o.reviewer for o in result.reviewers] == ["A", "B"]
    assert result.skipped == (("C", 1),)
    # The judge equals both reviewers everywhere: every comparison ties, d ≡ 0 < ε.
    assert result.passed is True


def test_results_the_judge_did_not_answer_are_left_out():
    result = alternative_annotator_test(
        {"i1": 1, "i2": 0, "i3": 0}, {**HUMANS, "i5": {"A": 1, "B": 0}}, min_items=3
    )
    assert result.items == 3


def test_benjamini_yekutieli_by_hand():
    """m = 4, c(4) = 25/12, α = 0.05: thresholds k · 0.05 / (4 · 25/12) = 0.006k:
    sorted p 0.001 ≤ 0.006, 0.011 ≤ 0.012, 0.02 > 0.018, 0.5 > 0.024: two rejected
    two rejected. Step-up: sorted 0.001, 0.015 (> 0.012), 0.017 (≤ 0.018), 0.5: the
    largest k that passes is 3, so 0.015 is rejected too."""
    assert benjamini_yekutieli([0.5, 0.011, 0.001, 0.02], 0.05) == [
        False,
        True,
        True,
        False,
    ]
    assert benjamini_yekutieli([0.017, 0.001, 0.5, 0.015], 0.05) == [
        True,
        True,
        False,
        True,
    ]
    assert benjamini_yekutieli([], 0.05) == []
