"""The differential suite's part for the agent kinds (conformance/kinds_agent.py), without
Node: the scripted judge gives our steps the script's verdicts, Mastra's steps the same
verdicts in its schemas' shapes, and the rows these kinds document are reproduced only by
the rule they name."""

from __future__ import annotations

import json

import pytest

from conformance.cases import generate
from conformance.judge_server import ScriptedJudge, scripted_judge
from conformance.kinds_agent import AGENT_KINDS, answer, explain
from conformance.run import Outcome, SideResult
from scoring import compute_score, judge_case, make_client, validate_options
from scoring.kinds.agent import score_rubric
from scoring.trajectory import tool_failures


@pytest.fixture(scope="module")
def cases():
    return [c for c in generate() if c.kind in AGENT_KINDS]


def _judged(case):
    judge = ScriptedJudge({case.id: case.script})
    with scripted_judge(judge) as url:
        client = make_client(f"{url}/v1", "x").with_options(
            default_headers={
                "x-conformance-case": case.id,
                "x-conformance-side": "ours",
            }
        )
        return judge_case(case.kind, case.item, case.options, client, model="m"), judge


@pytest.mark.parametrize(
    "kind",
    ["rubric", "multi_turn_judge", "tool_call_accuracy_llm", "trajectory_accuracy_llm"],
)
def test_the_scripted_judge_answers_our_steps(cases, kind):
    case = next(c for c in cases if c.kind == kind and not c.rows)
    result, judge = _judged(case)
    script = case.script
    analysis = result.analysis
    if kind == "rubric":
        assert [c["satisfied"] for c in analysis["criteria"]] == script["verdicts"]
    elif kind == "multi_turn_judge":
        assert analysis["satisfied"] is script["satisfied"]
    elif kind == "tool_call_accuracy_llm":
        assert [(e["tool"], e["appropriate"]) for e in analysis["evaluations"]] == [
            tuple(e) for e in script["evaluations"]
        ]
        assert analysis["missing_tools"] == script["missing"]
    else:
        assert [
            (s["name"], s["necessary"], s["in_order"]) for s in analysis["steps"]
        ] == [tuple(s) for s in script["steps"]]
    assert judge.calls["ours"] == 1  # one step, no reason call
    assert result.score == compute_score(kind, analysis, case.options)


def test_mastra_gets_the_same_verdicts_in_its_shapes(cases):
    rubric = next(c for c in cases if c.kind == "rubric")
    reply = json.loads(
        answer("mastra", rubric.script, "", {"criteria", "overallAssessment"})
    )
    assert [c["satisfied"] for c in reply["criteria"]] == rubric.script["verdicts"]
    assert [c["required"] for c in reply["criteria"]] == rubric.script["judge_required"]
    tools = next(
        c
        for c in cases
        if c.kind == "tool_call_accuracy_llm" and c.script["evaluations"]
    )
    reply = json.loads(
        answer("mastra", tools.script, "", {"evaluations", "missingTools"})
    )
    assert [e["wasAppropriate"] for e in reply["evaluations"]] == [
        ok for _, ok in tools.script["evaluations"]
    ]
    path = next(c for c in cases if c.kind == "trajectory_accuracy_llm")
    reply = json.loads(answer("mastra", path.script, "", {"stepEvaluations"}))
    assert len(reply["stepEvaluations"]) == len(path.script["steps"])
    # Mastra's reason steps carry no schema: plain text
    assert not answer("mastra", path.script, "", set()).startswith("{")


def test_the_agent_cases_cover_their_rows_and_options(cases):
    rows = {row for c in cases for row in c.rows}
    assert rows == {
        "rubric-required-from-judge",
        "trajectory-nothing-to-check",
        "trajectory-json-key-order",
    }
    for case in cases:
        validate_options(case.kind, case.options)
    traj = [c for c in cases if c.kind == "trajectory"]
    assert any("max_steps" in c.options for c in traj)
    assert any(c.options.get("blacklisted_sequences") for c in traj)
    assert any(
        any(call.get("success") is False for call in c.item["tool_calls"]) for c in traj
    )


def _outcome(case, ours, theirs, error=None):
    return Outcome(
        case, SideResult(ours, error=error), SideResult(theirs), ScriptedJudge({})
    )


def test_rows_reproduce_mastras_number_only(cases):
    rubric = next(c for c in cases if "rubric-required-from-judge" in c.rows)
    result, _ = _judged(rubric)
    options = validate_options("rubric", rubric.options)
    script = rubric.script
    theirs = score_rubric(
        {
            "criteria": [
                {"required": r, "satisfied": s}
                for r, s in zip(
                    script["judge_required"], script["verdicts"], strict=True
                )
            ]
        },
        options,
    )
    assert explain(_outcome(rubric, result.score, theirs))[0] == [
        "rubric-required-from-judge"
    ]
    assert explain(_outcome(rubric, result.score, 12345.0))[0] == []
    nothing = next(c for c in cases if "trajectory-nothing-to-check" in c.rows)
    failures = tool_failures(
        nothing.item["tool_calls"],
        nothing.options.get("max_retries_per_tool", 2),
    )
    theirs = failures["score"] if failures["patterns"] else 1.0
    error = "CaseError: nothing to check"
    assert explain(_outcome(nothing, None, theirs, error=error))[0] == [
        "trajectory-nothing-to-check"
    ]
    assert explain(_outcome(nothing, None, 0.123, error=error))[0] == []
    plain = next(c for c in cases if c.kind == "multi_turn_judge")
    assert explain(_outcome(plain, 1.0, 0.0))[0] == []
