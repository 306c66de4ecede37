"""The gate's rule on compare's figures: pass, regression, not enough evidence."""

from __future__ import annotations

import pytest

from evalsite_gate.decision import gate_exit_code, judge_pair


def _pair(delta, low, high, *, n=30, direction="higher", name="quality"):
    return {
        "name": name,
        "kind": "content_similarity",
        "direction": direction,
        "n": n,
        "missing": 0,
        "a_mean": 0.8,
        "b_mean": None if delta is None else 0.8 + delta,
        "mean_delta": delta,
        "mean_delta_ci_low": low,
        "mean_delta_ci_high": high,
        "mean_delta_p": 0.5,
    }


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.04, 0.02, "pass"),  # the whole interval above -0.05
        (-0.05, -0.01, "pass"),  # touching -margin is still within it
        (0.10, 0.20, "pass"),  # an improvement
        (-0.30, -0.06, "regression"),  # the whole interval below -0.05
        (-0.20, 0.01, "not enough evidence"),  # straddles -0.05
        (-0.06, -0.04, "not enough evidence"),  # narrow, but across -0.05
    ],
)
def test_the_interval_is_read_against_minus_the_margin(low, high, verdict):
    result = judge_pair(_pair((low + high) / 2, low, high), margin=0.05)
    assert result.verdict == verdict


def test_a_lower_is_better_scorer_regresses_when_its_mean_rises():
    # Hallucination-like: candidate − baseline = +0.2 is worse.
    worse = judge_pair(_pair(0.2, 0.1, 0.3, direction="lower"), margin=0.05)
    better = judge_pair(_pair(-0.2, -0.3, -0.1, direction="lower"), margin=0.05)
    assert worse.verdict == "regression"
    assert better.verdict == "pass"


@pytest.mark.parametrize("n", [0, 1])
def test_too_few_matched_items_are_not_enough_evidence(n):
    result = judge_pair(_pair(None if n == 0 else -0.5, None, None, n=n), margin=0.1)
    assert result.verdict == "not enough evidence"
    assert f"{n} item" in result.reason


def test_a_margin_of_zero_passes_identical_runs_only_when_nothing_dropped():
    assert judge_pair(_pair(0.0, 0.0, 0.0), margin=0.0).verdict == "pass"
    assert judge_pair(_pair(-0.01, -0.02, 0.0), margin=0.0).verdict == (
        "not enough evidence"
    )


def test_the_run_answer_is_the_worst_scorer_answer():
    ok = judge_pair(_pair(0.0, -0.01, 0.01), margin=0.05)
    unsure = judge_pair(_pair(-0.05, -0.2, 0.1), margin=0.05)
    bad = judge_pair(_pair(-0.3, -0.4, -0.2), margin=0.05)
    assert gate_exit_code([ok]) == 0
    assert gate_exit_code([ok, unsure]) == 2
    assert gate_exit_code([unsure, bad, ok]) == 1
    # Nothing measured is no evidence, never a pass.
    assert gate_exit_code([]) == 2
