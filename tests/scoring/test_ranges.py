"""The one score range (scoring/ranges.py): 0 to the scale, for every source."""

from __future__ import annotations

import math

import pytest

from scoring import ScoringError, clamp_score, score_bounds, score_in_range


@pytest.mark.parametrize(
    ("score", "scale", "inside"),
    [
        (0, 1, True),
        (1, 1, True),
        (0.5, 1, True),
        (-1, 1, False),
        (1.5, 1, False),
        (-0.0001, 1, False),
        (10, 10, True),
        (10.01, 10, False),
        # a rounded kind's perfect score at a scale finer than 0.01
        (0.34, 0.335, True),
        (0.35, 0.335, False),
        (math.nan, 1, False),
        (math.inf, 1, False),
        (10**400, 1, False),
        (True, 1, False),
        ("0.5", 1, False),
        (None, 1, False),
    ],
)
def test_score_in_range(score, scale, inside):
    assert score_in_range(score, scale) is inside


def test_score_bounds():
    assert score_bounds(1) == (0.0, 1.0)
    assert score_bounds(10) == (0.0, 10.0)
    assert score_bounds(0.335) == (0.0, 0.34)
    assert score_bounds(0.331) == (0.0, 0.331)


@pytest.mark.parametrize(
    ("score", "scale", "clamped"),
    [(1.5, 1, 1.0), (-1, 1, 0.0), (0.4, 1, 0.4), (-0.0, 1, 0.0), (12, 10, 10.0)],
)
def test_clamp_score(score, scale, clamped):
    result = clamp_score(score, scale)
    assert result == clamped and math.copysign(1, result) == 1
    assert score_in_range(result, scale)


@pytest.mark.parametrize("score", [math.nan, math.inf, -math.inf, 10**400, True, "1"])
def test_clamp_score_refuses_what_is_no_finite_number(score):
    with pytest.raises(ScoringError, match="finite number"):
        clamp_score(score, 1)
