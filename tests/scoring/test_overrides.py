"""Verdict-level overrides: a new analysis, validated paths and values, exact recompute."""

from __future__ import annotations

import copy

import pytest

from scoring import (
    AnalysisError,
    UnknownKindError,
    apply_override,
    compute_score,
    get_path,
    overridable_count,
)

FAITH = {
    "claims": ["a", "b", "c"],
    "verdicts": [
        {"claim": "a", "verdict": "yes", "reason": ""},
        {"claim": "b", "verdict": "no", "reason": ""},
        {"claim": "c", "verdict": "unsure", "reason": ""},
    ],
}
RELEVANCE = {
    "evaluations": [
        {"context_index": 0, "relevance": "high", "used": False, "reason": ""},
        {"context_index": 1, "relevance": "low", "used": True, "reason": ""},
    ],
    "missing_context": [],
}


def test_override_returns_a_new_analysis_and_the_score_follows():
    original = copy.deepcopy(FAITH)
    assert compute_score("faithfulness", FAITH) == 0.33
    changed = apply_override("faithfulness", FAITH, "verdicts.1.verdict", "yes")
    assert original == FAITH  # input untouched
    assert get_path(changed, "verdicts.1.verdict") == "yes"
    assert compute_score("faithfulness", changed) == 0.67
    again = apply_override("faithfulness", changed, "verdicts.2.verdict", "yes")
    assert compute_score("faithfulness", again) == 1.0


def test_override_value_is_normalised():
    changed = apply_override("faithfulness", FAITH, "verdicts.0.verdict", " UNSURE ")
    assert get_path(changed, "verdicts.0.verdict") == "unsure"
    fact = apply_override(
        "factuality", {"category": "A", "reason": "r"}, "category", " d"
    )
    assert fact["category"] == "D"
    assert compute_score("factuality", fact) == 0.0


def test_context_relevance_overrides():
    # (1 + 0.3) / 2 - 0.1 = 0.55
    assert compute_score("context_relevance", RELEVANCE) == 0.55
    used = apply_override("context_relevance", RELEVANCE, "evaluations.0.used", True)
    assert compute_score("context_relevance", used) == 0.65
    lowered = apply_override(
        "context_relevance", RELEVANCE, "evaluations.0.relevance", "medium"
    )
    assert (
        compute_score("context_relevance", lowered) == 0.5
    )  # (0.7 + 0.3) / 2, no penalty


@pytest.mark.parametrize(
    ("kind", "analysis", "path", "value", "fragment"),
    [
        ("faithfulness", FAITH, "verdicts.3.verdict", "yes", "out of range"),
        ("faithfulness", FAITH, "verdicts.1.verdict", "maybe", "not allowed"),
        ("faithfulness", FAITH, "verdicts.1.reason", "x", "cannot be overridden"),
        ("faithfulness", FAITH, "claims.0", "x", "cannot be overridden"),
        ("faithfulness", FAITH, "verdicts..verdict", "yes", "invalid path"),
        ("faithfulness", FAITH, "", "yes", "invalid path"),
        ("hallucination", FAITH, "verdicts.0.verdict", "unsure", "not allowed"),
        ("context_relevance", RELEVANCE, "evaluations.0.used", 1, "not allowed"),
        ("context_relevance", RELEVANCE, "evaluations.0.used", "true", "not allowed"),
        ("context_relevance", RELEVANCE, "missing_context", [], "cannot be overridden"),
        ("factuality", {"category": "A"}, "category", "F", "not allowed"),
        ("custom_rubric", {"score": 0.5}, "score", 1, "cannot be overridden"),
        ("keyword_coverage", {"ratio": 0.5}, "ratio", 1, "cannot be overridden"),
    ],
)
def test_override_errors(kind, analysis, path, value, fragment):
    with pytest.raises(AnalysisError) as info:
        apply_override(kind, analysis, path, value)
    assert info.value.path == path
    assert fragment in str(info.value)


def test_override_rejects_an_invalid_analysis():
    broken = {"verdicts": [{"verdict": "maybe"}]}
    with pytest.raises(AnalysisError) as info:
        apply_override("faithfulness", broken, "verdicts.0.verdict", "yes")
    assert info.value.path == "verdicts[0].verdict"


def test_get_path():
    assert get_path(FAITH, "verdicts.2.verdict") == "unsure"
    assert get_path(FAITH, "claims.1") == "b"
    assert get_path({"category": "C"}, "category") == "C"
    with pytest.raises(AnalysisError):
        get_path(FAITH, "verdicts.9.verdict")
    with pytest.raises(AnalysisError):
        get_path(FAITH, "nothing")


def test_overridable_count_is_one_per_flippable_value():
    assert overridable_count("faithfulness", FAITH) == 3
    # relevance and used: two per evaluation
    assert overridable_count("context_relevance", RELEVANCE) == 2 * len(
        RELEVANCE["evaluations"]
    )
    assert overridable_count("factuality", {"category": "C", "reason": ""}) == 1
    assert overridable_count("faithfulness", {"claims": [], "verdicts": []}) == 0
    assert overridable_count("faithfulness", None) == 0
    # text kinds have nothing to flip: reviewers override score or pass
    assert overridable_count("keyword_coverage", {"matched": 1, "total": 2}) == 0
    with pytest.raises(UnknownKindError):
        overridable_count("nope", FAITH)
