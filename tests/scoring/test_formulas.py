"""Hand-computed vectors for every formula, rounding rule and pass rule of SCORERS.md."""

from __future__ import annotations

import pytest

from scoring import (
    AnalysisError,
    OptionsError,
    UnknownKindError,
    compute_score,
    passes,
    round_half_up,
)
from scoring.formulas import SCORE_FUNCTIONS


def verdicts(*values: str, key: str = "claim") -> list[dict]:
    return [
        {key: f"{key} {i}", "verdict": v, "reason": ""} for i, v in enumerate(values)
    ]


def faith(*values: str) -> dict:
    return {
        "claims": [f"claim {i}" for i in range(len(values))],
        "verdicts": verdicts(*values),
    }


def ev(relevance: str, used: bool, index: int = 0) -> dict:
    return {"context_index": index, "relevance": relevance, "used": used, "reason": ""}


def prec(*values: str) -> dict:
    return {
        "verdicts": [
            {"context_index": i, "verdict": v, "reason": ""}
            for i, v in enumerate(values)
        ]
    }


# --- rounding -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.625, 0.63),
        (0.125, 0.13),
        (2 / 3, 0.67),
        (0.5, 0.5),
        (0.0, 0.0),
        (1.0, 1.0),
        (6.666666666666667, 6.67),
        (0.1 + 0.2, 0.3),
        (
            1.005,
            1.01,
        ),  # 1.005 is 1.00499999999999989... as a float: the epsilon rounds it up
        (0.124, 0.12),
    ],
)
def test_round_half_up(x, expected):
    assert round_half_up(x) == expected


def test_round_half_up_differs_from_python_round():
    assert round(0.625, 2) == 0.62 and round_half_up(0.625) == 0.63
    assert round(0.125, 2) == 0.12 and round_half_up(0.125) == 0.13


# --- faithfulness ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "options", "expected"),
    [
        (["yes", "yes", "no"], None, 0.67),
        (["yes", "yes", "no", "unsure"], None, 0.5),
        (["yes", "yes", "no"], {"scale": 10}, 6.67),
        ([], None, 0.0),
        ([], {"scale": 10}, 0.0),
        (["unsure", "unsure", "unsure"], None, 0.0),
        (["yes"] * 5, None, 1.0),
        (["yes"] * 5, {"scale": 7}, 7.0),
        # 5/8 = 0.625 -> 0.63 and 1/8 = 0.125 -> 0.13 (round half up)
        (["yes"] * 5 + ["no"] * 3, None, 0.63),
        (["yes"] + ["no"] * 7, None, 0.13),
        (["yes", "no", "no", "no"], {"scale": 0.5}, 0.13),  # 0.125 after scaling
    ],
)
def test_faithfulness(values, options, expected):
    assert compute_score("faithfulness", faith(*values), options) == expected


def test_faithfulness_denominator_is_verdicts_not_claims():
    analysis = {"claims": ["a", "b", "c", "d"], "verdicts": verdicts("yes", "no")}
    assert compute_score("faithfulness", analysis) == 0.5


def test_enums_are_trimmed_and_lower_cased():
    assert compute_score("faithfulness", faith(" YES ", "Yes", "no\n")) == 0.67


# --- hallucination -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "options", "expected"),
    [
        (["yes", "no", "no", "no"], None, 0.25),
        (["yes", "yes", "no"], {"scale": 5}, 3.33),
        ([], None, 0.0),
        (["no", "no"], None, 0.0),
        (["yes", "yes"], None, 1.0),
    ],
)
def test_hallucination(values, options, expected):
    analysis = {"claims": [], "verdicts": verdicts(*values)}
    assert compute_score("hallucination", analysis, options) == expected


def test_hallucination_rejects_unsure():
    with pytest.raises(AnalysisError) as info:
        compute_score("hallucination", {"verdicts": verdicts("yes", "unsure")})
    assert info.value.path == "verdicts[1].verdict"


# --- context_relevance ---------------------------------------------------------------


def test_context_relevance_examples():
    assert (
        compute_score(
            "context_relevance",
            {"evaluations": [ev("high", True), ev("medium", True), ev("low", False)]},
        )
        == 0.67
    )  # (1 + 0.7 + 0.3) / 3 = 0.667; the unused chunk is low, so no penalty
    assert (
        compute_score(
            "context_relevance",
            {
                "evaluations": [ev("high", False), ev("high", True)],
                "missing_context": ["x"],
            },
        )
        == 0.75
    )  # 1 - 0.10 - 0.15
    assert (
        compute_score(
            "context_relevance",
            {"evaluations": [ev("high", False)] * 3 + [ev("medium", True)]},
        )
        == 0.63
    )  # 3.7 / 4 - 0.3 = 0.625 -> 0.63
    assert (
        compute_score(
            "context_relevance",
            {
                "evaluations": [ev("high", True), ev("medium", True)],
                "missing_context": ["a"] * 4,
            },
        )
        == 0.35
    )  # 0.85 - min(0.6, 0.5)


def test_context_relevance_custom_penalties():
    options = {
        "penalties": {
            "unused_high_relevance": 0.2,
            "missing_context_per_item": 0.3,
            "max_missing_context_penalty": 0.4,
        }
    }
    analysis = {
        "evaluations": [ev("high", False), ev("high", True)],
        "missing_context": ["a", "b"],
    }
    assert (
        compute_score("context_relevance", analysis, options) == 0.4
    )  # 1 - 0.2 - min(0.6, 0.4)


def test_context_relevance_explicit_zero_penalties_are_honoured():
    analysis = {
        "evaluations": [ev("high", False), ev("high", True)],
        "missing_context": ["a"],
    }
    assert compute_score("context_relevance", analysis) == 0.75
    zero_usage = {"penalties": {"unused_high_relevance": 0}}
    assert (
        compute_score("context_relevance", analysis, zero_usage) == 0.85
    )  # 1 - 0 - 0.15
    zero_missing = {"penalties": {"missing_context_per_item": 0}}
    assert compute_score("context_relevance", analysis, zero_missing) == 0.9
    zero_cap = {"penalties": {"max_missing_context_penalty": 0}}
    assert compute_score("context_relevance", analysis, zero_cap) == 0.9


def test_context_relevance_usage_penalty_has_no_cap_and_score_floor_is_zero():
    analysis = {"evaluations": [ev("high", False)] * 4, "missing_context": ["a"] * 5}
    # 1 - 0.4 - 0.5 = 0.1
    assert compute_score("context_relevance", analysis) == 0.1
    heavy = {"penalties": {"unused_high_relevance": 0.5}}
    assert compute_score("context_relevance", analysis, heavy) == 0.0  # 1 - 2 - 0.5 < 0


def test_context_relevance_missing_cap_applies():
    analysis = {"evaluations": [ev("high", True)], "missing_context": ["a"] * 10}
    assert compute_score("context_relevance", analysis) == 0.5


def test_context_relevance_scale():
    analysis = {
        "evaluations": [ev("high", False), ev("high", True)],
        "missing_context": ["x"],
    }
    assert compute_score("context_relevance", analysis, {"scale": 10}) == 7.5


def test_context_relevance_no_context_chunks_scores_full_scale():
    analysis = {
        "evaluations": [ev("none", False)],
        "missing_context": ["a"],
        "context_count": 0,
    }
    assert compute_score("context_relevance", analysis) == 1.0
    assert compute_score("context_relevance", analysis, {"scale": 10}) == 10.0


def test_context_relevance_no_evaluations():
    assert compute_score("context_relevance", {"evaluations": []}) == 1.0
    assert compute_score("context_relevance", {"evaluations": []}, {"scale": 5}) == 5.0
    missing = {"evaluations": [], "missing_context": ["a"], "context_count": 3}
    assert compute_score("context_relevance", missing, {"scale": 5}) == 0.0


def test_context_relevance_sums_left_to_right():
    # Mastra's reduce: ((0.3 + 0.7) + 0.7) + 1.0 = 2.7 -> 4.73 at scale 7; Python
    # 3.12's compensated sum() gives 2.6999999999999997 -> 4.72.
    analysis = {
        "evaluations": [
            ev("low", True, 0),
            ev("medium", True, 1),
            ev("medium", True, 2),
            ev("high", True, 3),
        ]
    }
    assert compute_score("context_relevance", analysis, {"scale": 7}) == 4.73


def test_context_relevance_all_none():
    analysis = {"evaluations": [ev("none", False), ev("none", True)]}
    assert compute_score("context_relevance", analysis) == 0.0


# --- context_precision ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["yes", "no", "yes"], 0.83),  # (1/1 + 2/3) / 2
        (["no", "yes", "yes"], 0.58),  # (1/2 + 2/3) / 2
        (["no", "no", "yes"], 0.33),
        (["no", "no"], 0.0),
        ([], 0.0),
        (["yes", "yes"], 1.0),
    ],
)
def test_context_precision(values, expected):
    assert compute_score("context_precision", prec(*values)) == expected


def test_context_precision_sorts_by_context_index():
    analysis = {
        "verdicts": [
            {"context_index": 2, "verdict": "yes"},
            {"context_index": 0, "verdict": "no"},
            {"context_index": 1, "verdict": "yes"},
        ]
    }
    assert compute_score("context_precision", analysis) == 0.58  # [no, yes, yes]
    assert compute_score("context_precision", analysis, {"scale": 10}) == 5.83


# --- answer_relevancy ----------------------------------------------------------------


def test_answer_relevancy():
    analysis = {
        "statements": [],
        "verdicts": verdicts("yes", "unsure", "no", key="statement"),
    }
    assert compute_score("answer_relevancy", analysis) == 0.43  # 1.3 / 3
    assert (
        compute_score("answer_relevancy", analysis, {"uncertainty_weight": 0}) == 0.33
    )
    assert (
        compute_score("answer_relevancy", analysis, {"uncertainty_weight": 1}) == 0.67
    )
    assert compute_score("answer_relevancy", analysis, {"scale": 10}) == 4.33
    assert compute_score("answer_relevancy", {"verdicts": []}) == 0.0
    all_unsure = {"verdicts": verdicts("unsure", "unsure", key="statement")}
    assert compute_score("answer_relevancy", all_unsure) == 0.3


def test_answer_relevancy_adds_the_weight_verdict_by_verdict():
    # Mastra's count: +1 per yes, +weight per unsure, in verdict order. 5 yes then 3
    # unsure make 5.8999999999999995 (7.37 at scale 10); 3 unsure first make 5.9 (7.38).
    options = {"uncertainty_weight": 0.3, "scale": 10}
    yes_first = {"verdicts": verdicts(*["yes"] * 5, *["unsure"] * 3, key="statement")}
    unsure_first = {
        "verdicts": verdicts(*["unsure"] * 3, *["yes"] * 5, key="statement")
    }
    assert compute_score("answer_relevancy", yes_first, options) == 7.37
    assert compute_score("answer_relevancy", unsure_first, options) == 7.38


# --- bias / toxicity ---------------------------------------------------------------------


def test_bias():
    analysis = {
        "opinions": ["a", "b", "c"],
        "verdicts": verdicts("yes", "no", "no", key="opinion"),
    }
    assert compute_score("bias", analysis) == 0.33
    assert compute_score("bias", analysis, {"scale": 10}) == 3.33
    assert compute_score("bias", {"opinions": [], "verdicts": []}) == 0.0


def test_toxicity_no_verdicts_is_zero_not_one():
    assert compute_score("toxicity", {"verdicts": []}) == 0.0
    assert (
        compute_score("toxicity", {"verdicts": [{"verdict": "yes"}, {"verdict": "no"}]})
        == 0.5
    )


# --- factuality ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "options", "score", "passed"),
    [
        ("A", None, 1.0, True),
        ("B", None, 1.0, True),
        ("C", None, 1.0, True),
        ("D", None, 0.0, False),
        ("E", None, 1.0, True),
        ("D", {"category_scores": {"disagree": 0.25}}, 0.25, True),
        ("A", {"category_scores": {"subset": 0}}, 0.0, False),
        ("B", {"category_scores": {"superset": 0.75}, "scale": 2}, 1.5, True),
        ("A", {"scale": 10}, 10.0, True),
        ("D", {"category_scores": {"disagree": 0.25}, "scale": 10}, 2.5, True),
        ("D", {"category_scores": {"disagree": 1}}, 1.0, True),
        ("C", {"category_scores": {"agree": 0.333}}, 0.333, True),  # not rounded
        # a user-set threshold replaces "score > 0"
        ("D", {"category_scores": {"disagree": 0.25}, "threshold": 0.5}, 0.25, False),
        ("D", {"category_scores": {"disagree": 0.5}, "threshold": 0.5}, 0.5, True),
        ("A", {"threshold": 1}, 1.0, True),
        ("D", {"threshold": 0}, 0.0, True),  # 0 >= 0 x scale
        (
            "D",
            {"category_scores": {"disagree": 0.25}, "scale": 10, "threshold": 0.3},
            2.5,
            False,
        ),
    ],
)
def test_factuality(category, options, score, passed):
    analysis = {"category": category, "reason": "r"}
    result = compute_score("factuality", analysis, options)
    assert result == score
    assert passes("factuality", result, options) is passed


@pytest.mark.parametrize("value", [1.5, -1, 2, -0.01])
def test_factuality_refuses_category_scores_outside_0_1(value):
    # promptfoo takes any number; ours would leave 0-scale (README row
    # factuality-category-score-range).
    with pytest.raises(OptionsError) as info:
        compute_score(
            "factuality",
            {"category": "D", "reason": "r"},
            {"category_scores": {"disagree": value}},
        )
    assert info.value.field == "category_scores.disagree"


def test_compute_score_refuses_a_score_outside_the_scale(monkeypatch):
    # Guard for every formula: a score outside 0-scale is never returned.
    monkeypatch.setitem(SCORE_FUNCTIONS, "faithfulness", lambda analysis, options: 1.5)
    with pytest.raises(AnalysisError, match="outside 0-1"):
        compute_score("faithfulness", {"claims": [], "verdicts": []})
    monkeypatch.setitem(SCORE_FUNCTIONS, "faithfulness", lambda analysis, options: -0.5)
    with pytest.raises(AnalysisError, match="outside 0-10"):
        compute_score("faithfulness", {"claims": [], "verdicts": []}, {"scale": 10})


def test_factuality_category_is_upper_cased_and_trimmed():
    assert compute_score("factuality", {"category": " d "}) == 0.0
    with pytest.raises(AnalysisError) as info:
        compute_score("factuality", {"category": "(A)"})
    assert info.value.path == "category"
    with pytest.raises(AnalysisError):
        compute_score("factuality", {"category": "F"})


# --- custom_rubric ---------------------------------------------------------------------------


def test_custom_rubric():
    assert compute_score("custom_rubric", {"score": 0.625, "reason": ""}) == 0.63
    assert compute_score("custom_rubric", {"score": 0.7}, {"scale": 10}) == 7.0
    assert compute_score("custom_rubric", {"score": 0}) == 0.0
    assert compute_score("custom_rubric", {"score": 1}) == 1.0
    for bad in (1.01, -0.1, "0.5x", None, True):
        with pytest.raises(AnalysisError) as info:
            compute_score("custom_rubric", {"score": bad})
        assert info.value.path == "score"


# --- non-LLM scaling ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    [
        "content_similarity",
        "textual_difference",
        "keyword_coverage",
        "completeness",
        "tone_consistency",
    ],
)
def test_text_kinds_scale_but_do_not_round(kind):
    assert compute_score(kind, {"ratio": 0.6153846153846154}) == 0.6153846153846154
    assert compute_score(kind, {"ratio": 0.625, "details": 1}, {"scale": 10}) == 6.25
    assert compute_score(kind, {"ratio": 1 / 3}, {"scale": 3}) == 1.0


# --- pass rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "score", "options", "expected"),
    [
        ("faithfulness", 0.5, None, True),
        ("faithfulness", 0.49, None, False),
        ("faithfulness", 6.67, {"scale": 10}, True),
        ("faithfulness", 4.99, {"scale": 10}, False),
        (
            "faithfulness",
            7.0,
            {"scale": 10, "threshold": 0.7},
            True,
        ),  # 0.7 x 10 = 7.000000000000001
        ("faithfulness", 0.69, {"threshold": 0.7}, False),
        ("hallucination", 0.5, None, True),
        ("hallucination", 0.51, None, False),
        ("hallucination", 0.0, {"threshold": 0}, True),
        ("hallucination", 0.01, {"threshold": 0}, False),
        ("bias", 3.33, {"scale": 10, "threshold": 0.3}, False),
        ("bias", 3.0, {"scale": 10, "threshold": 0.3}, True),
        ("toxicity", 1.0, {"threshold": 1}, True),
        ("context_relevance", 0.63, {"threshold": 0.63}, True),
        ("content_similarity", 0.25, None, False),
        ("textual_difference", 0.6153846153846154, None, True),
        ("factuality", 0.0, None, False),
        ("factuality", 0.01, None, True),
    ],
)
def test_passes(kind, score, options, expected):
    assert passes(kind, score, options) is expected


def test_unknown_kind():
    with pytest.raises(UnknownKindError) as info:
        compute_score("faithfullness", {"verdicts": []})
    assert "faithfullness" in str(info.value)
    with pytest.raises(UnknownKindError):
        passes("nope", 1.0)


def test_analysis_error_names_the_path():
    analysis = faith("yes", "no")
    analysis["verdicts"].append({"claim": "c", "verdict": "maybe"})
    with pytest.raises(AnalysisError) as info:
        compute_score("faithfulness", analysis)
    assert info.value.path == "verdicts[2].verdict"
    assert "verdicts[2].verdict" in str(info.value)
    assert "maybe" in str(info.value)
