"""tool_call_accuracy and trajectory_accuracy: Mastra's code scorers."""

from __future__ import annotations

import pytest

from scoring import (
    KINDS,
    CaseError,
    OptionsError,
    analyze_text,
    compute_score,
    judge_case,
    passes,
    validate_options,
)


def calls(*names: str) -> list[dict]:
    return [{"name": n, "arguments": {"q": n}, "result": "ok"} for n in names]


def ratio(names, **options) -> float:
    return analyze_text("tool_call_accuracy", {"tool_calls": calls(*names)}, options)[
        "ratio"
    ]


@pytest.mark.parametrize(
    ("names", "options", "expected"),
    [
        (["search"], {"expected_tool": "search"}, 1.0),
        (["fetch", "search"], {"expected_tool": "search"}, 1.0),
        (["fetch", "search"], {"expected_tool": "search", "strict_mode": True}, 0.0),
        (["search"], {"expected_tool": "search", "strict_mode": True}, 1.0),
        (["search", "search"], {"expected_tool": "search", "strict_mode": True}, 0.0),
        (["fetch"], {"expected_tool": "search"}, 0.0),
        ([], {"expected_tool": "search"}, 0.0),  # no call at all
        (["a", "x", "b"], {"expected_tool_order": ["a", "b"]}, 1.0),
        (["b", "a"], {"expected_tool_order": ["a", "b"]}, 0.0),
        (["a"], {"expected_tool_order": ["a", "b"]}, 0.0),
        # first calls count: b's first call comes before a's
        (["b", "a", "b"], {"expected_tool_order": ["a", "b"]}, 0.0),
        (
            ["a", "x", "b"],
            {"expected_tool_order": ["a", "b"], "strict_mode": True},
            0.0,
        ),
        (["a", "b"], {"expected_tool_order": ["a", "b"], "strict_mode": True}, 1.0),
        # the order wins over the tool
        (["a", "b"], {"expected_tool": "z", "expected_tool_order": ["a", "b"]}, 1.0),
        ([], {"expected_tool_order": ["a"]}, 0.0),
    ],
)
def test_tool_call_accuracy(names, options, expected):
    assert ratio(names, **options) == expected


def test_details_score_and_pass():
    analysis = analyze_text(
        "tool_call_accuracy",
        {"tool_calls": calls("fetch", "search")},
        {"expected_tool": "search"},
    )
    assert analysis["actual_tools"] == ["fetch", "search"]
    assert analysis["correct_tool_called"] is True
    assert analysis["correct_order_called"] is None
    assert compute_score("tool_call_accuracy", analysis, {"scale": 10}) == 10.0
    assert passes("tool_call_accuracy", 1.0) and not passes("tool_call_accuracy", 0.0)
    assert KINDS["tool_call_accuracy"].needs_judge is False


def test_expected_calls_from_the_item():
    case = {"tool_calls": calls("a", "b"), "expected_tool_calls": ["a", {"name": "b"}]}
    analysis = analyze_text("tool_call_accuracy", case)
    assert analysis["ratio"] == 1.0
    assert analysis["expected_from"] == "item"
    # options win over the item
    assert (
        analyze_text("tool_call_accuracy", case, {"expected_tool": "z"})["ratio"] == 0.0
    )


def test_options_from_a_form():
    options = validate_options(
        "tool_call_accuracy", {"expected_tool": " ", "expected_tool_order": "a, b ,"}
    )
    assert options["expected_tool"] is None
    assert options["expected_tool_order"] == ["a", "b"]
    assert (
        validate_options("tool_call_accuracy", {"expected_tool_order": ""})[
            "expected_tool_order"
        ]
        is None
    )
    with pytest.raises(OptionsError):
        validate_options("tool_call_accuracy", {"strict_mode": "yes"})


@pytest.mark.parametrize(
    ("case", "options", "field"),
    [
        ({"output": "x"}, {"expected_tool": "a"}, "tool_calls"),
        ({"tool_calls": "search"}, {"expected_tool": "a"}, "tool_calls"),
        (
            {"tool_calls": [{"arguments": {}}]},
            {"expected_tool": "a"},
            "tool_calls[0].name",
        ),
        ({"tool_calls": calls("a")}, {}, "expected_tool_calls"),
    ],
)
def test_case_errors_name_the_field(case, options, field):
    with pytest.raises(CaseError) as info:
        analyze_text("tool_call_accuracy", case, options)
    assert info.value.field == field


def test_judge_case_needs_no_client():
    result = judge_case(
        "tool_call_accuracy",
        {"input": "weather?", "output": "Sunny.", "tool_calls": calls("weather")},
        {"expected_tool": "weather"},
        None,
        model="unused",
    )
    assert result.score == 1.0 and result.passed and result.steps == []


# --- trajectory_accuracy ---------------------------------------------------------


def trajectory(names, expected, **options) -> float:
    case = {"tool_calls": calls(*names), "expected_tool_calls": expected}
    return analyze_text("trajectory_accuracy", case, options)["ratio"]


@pytest.mark.parametrize(
    ("names", "expected", "options", "score"),
    [
        (["a", "x", "b"], ["a", "b"], {}, 1.0),  # relaxed: calls between are fine
        (["b", "a"], ["a", "b"], {}, 0.5),  # a matches, b only came before it
        (["b", "a"], ["a", "b"], {"ordering": "unordered"}, 1.0),
        (["a", "x", "b"], ["a", "b"], {"ordering": "strict"}, 0.25),  # 1/2 - 1/2 x 0.5
        (["a", "b"], ["a", "b"], {"ordering": "strict"}, 1.0),
        (["a", "b", "c"], ["a", "b"], {"ordering": "strict"}, 0.75),  # one extra call
        (["a", "a", "b"], ["a", "b"], {"allow_repeated_steps": False}, 0.9),
        ([], ["a"], {}, 0.0),
        ([], [], {}, 1.0),  # nothing expected, nothing called
        (["a"], [], {}, 0.0),
        (["a", "b", "c"], ["a", "b", "c"], {"ordering": "strict"}, 1.0),
        (["x", "y", "z"], ["a", "b", "c"], {}, 0.0),
        (["a", "c"], ["a", "b", "c"], {}, 0.67),  # rounded to 2 decimals
    ],
)
def test_trajectory_accuracy(names, expected, options, score):
    assert trajectory(names, expected, **options) == score


def test_trajectory_arguments_and_results_must_match_when_given():
    called = [{"name": "search", "arguments": {"q": "x", "n": 1}, "result": "ok"}]
    case = {"tool_calls": called}
    for expected, score in [
        ([{"name": "search", "arguments": {"n": 1, "q": "x"}}], 1.0),  # key order: same
        ([{"name": "search", "arguments": {"n": 1.0, "q": "x"}}], 1.0),  # 1 == 1.0
        ([{"name": "search", "arguments": {"n": True, "q": "x"}}], 0.0),  # not a number
        ([{"name": "search", "arguments": {"q": "y", "n": 1}}], 0.0),
        ([{"name": "search", "result": "ok"}], 1.0),
        ([{"name": "search", "result": "no"}], 0.0),
    ]:
        analysis = analyze_text(
            "trajectory_accuracy", {**case, "expected_tool_calls": expected}
        )
        assert analysis["ratio"] == score, expected


def test_trajectory_expected_names_from_the_options_win():
    case = {"tool_calls": calls("a", "b"), "expected_tool_calls": ["z"]}
    analysis = analyze_text(
        "trajectory_accuracy", case, {"expected_tool_order": "a, b", "scale": 10}
    )
    assert analysis["ratio"] == 1.0 and analysis["expected_from"] == "options"
    assert compute_score("trajectory_accuracy", analysis, {"scale": 10}) == 10.0
    with pytest.raises(CaseError) as info:
        analyze_text("trajectory_accuracy", {"tool_calls": calls("a")})
    assert info.value.field == "expected_tool_calls"
    with pytest.raises(OptionsError):
        validate_options("trajectory_accuracy", {"ordering": "loose"})
