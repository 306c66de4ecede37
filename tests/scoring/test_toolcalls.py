"""tool_call_accuracy: Mastra's code scorer, on the item's tool calls (issue 18, part 1)."""

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
