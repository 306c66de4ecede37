"""The differential suite's part for scoring.kinds.rag's kinds (conformance/kinds_rag.py),
without Node: the scripted judge gives our steps the script's verdicts and Mastra's steps
the same verdicts in its schemas' shapes, and the rows these kinds reproduce explain a
difference only by the rule they name."""

from __future__ import annotations

import json

import pytest

from conformance.cases import generate
from conformance.judge_server import ScriptedJudge, scripted_judge
from conformance.kinds_rag import RAG_KINDS, ROW_CHECKS, answer
from conformance.rows import explain
from conformance.run import Outcome, SideResult
from scoring import compute_score, judge_case, make_client


@pytest.fixture(scope="module")
def cases():
    return [c for c in generate() if c.kind in RAG_KINDS]


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


def _plain(case) -> bool:
    """A case that must score the same on both sides, with something to score."""
    script = case.script
    return not case.rows and bool(
        script.get("matches")
        or script.get("verdicts")
        or script.get("dimensions")
        or script.get("requirements")
        or (script.get("claims") and script.get("coverage"))
    )


@pytest.mark.parametrize("kind", RAG_KINDS)
def test_the_scripted_judge_answers_our_steps(cases, kind):
    case = next(c for c in cases if c.kind == kind and _plain(c))
    result, judge = _judged(case)
    script, analysis = case.script, result.analysis
    if kind == "answer_similarity":
        assert [m["match"] for m in analysis["matches"]] == script["matches"]
        assert len(analysis["contradictions"]) == script["contradictions"]
    elif kind == "context_recall":
        assert analysis["claims"] == script["items"]
        assert [v["verdict"] for v in analysis["verdicts"]] == [
            v.strip().lower() for v in script["verdicts"]
        ]
    elif kind == "noise_sensitivity":
        assert [d["impact"] for d in analysis["dimensions"]] == [
            impact for _, impact in script["dimensions"]
        ]
        assert analysis["robustness_score"] == script["robustness"]
    elif kind == "prompt_alignment":
        assert [r["fulfilled"] for r in analysis["requirements"]] == script[
            "requirements"
        ]
        assert analysis["intent"]["score"] == script["intent"]
    else:
        assert [c["supported"] for c in analysis["alignment"]] == script["claims"]
        assert [c["answered"] for c in analysis["coverage"]] == script["coverage"]
    assert result.score == compute_score(kind, analysis, case.options)
    # every step was asked once, the reason included
    assert judge.calls["ours"] == len(result.steps)
    assert [s.name for s in result.steps][-1] == "reason"


def test_mastra_gets_the_same_verdicts_in_its_shapes(cases):
    by_kind = {
        kind: next(c for c in cases if c.kind == kind and _plain(c))
        for kind in RAG_KINDS
    }
    script = by_kind["answer_similarity"].script
    matches = json.loads(
        answer("mastra", script, "", {"matches", "extraInOutput", "contradictions"})
    )
    assert [m["matchType"] for m in matches["matches"]] == script["matches"]
    assert len(matches["contradictions"]) == script["contradictions"]
    units = json.loads(
        answer("mastra", script, "", {"outputUnits", "groundTruthUnits"})
    )
    assert units["groundTruthUnits"] == script["reference_units"]
    script = by_kind["noise_sensitivity"].script
    impact = json.loads(
        answer("mastra", script, "", {"dimensions", "robustnessScore", "majorIssues"})
    )
    assert impact["robustnessScore"] == script["robustness"]
    assert [d["impactLevel"] for d in impact["dimensions"]] == [
        level for _, level in script["dimensions"]
    ]
    script = by_kind["prompt_alignment"].script
    alignment = json.loads(answer("mastra", script, "", {"intentAlignment"}))
    fulfilment = alignment["requirementsFulfillment"]
    assert [r["isFulfilled"] for r in fulfilment["requirements"]] == script[
        "requirements"
    ]
    assert fulfilment["overallScore"] == script["requirements_score"]
    script = by_kind["summarization"].script
    coverage = json.loads(answer("mastra", script, "", {"coverage"}))
    assert [c["answered"] for c in coverage["coverage"]] == script["coverage"]
    # the reason step has no schema: plain text
    assert answer("mastra", script, "", set()).startswith("Scripted explanation")


def test_the_cases_cover_their_rows_and_options(cases):
    rows = {(c.kind, row) for c in cases for row in c.rows}
    assert {
        ("prompt_alignment", "prompt-alignment-requirements"),
        ("prompt_alignment", "prompt-alignment-score-range"),
        ("answer_similarity", "verdict-case-and-space"),
        ("noise_sensitivity", "verdict-case-and-space"),
        ("context_recall", "blank-reference"),
        ("context_recall", "verdict-off-vocabulary"),
    } <= rows
    modes = {
        c.options.get("evaluation_mode") for c in cases if c.kind == "prompt_alignment"
    }
    assert modes == {None, "user", "system", "both"}
    assert any("max_questions" in c.options for c in cases if c.kind == "summarization")
    assert any(
        "impact_weights" in c.options for c in cases if c.kind == "noise_sensitivity"
    )
    # Mastra's noise sensitivity has no scale: those cases stay at ours' scale 1
    assert all("scale" not in c.options for c in cases if c.kind == "noise_sensitivity")


def _outcome(case, ours, theirs):
    return Outcome(case, ours, theirs, ScriptedJudge({}))


def test_rows_reproduce_mastras_number_only(cases):
    case = next(c for c in cases if "prompt-alignment-requirements" in c.rows)
    script = case.script
    ours, _ = _judged(case)
    mine = SideResult(ours.score)
    # Mastra's: the same weights with the judge's own requirements number
    raw = {
        "intent": {"score": script["intent"]},
        "completeness": {"score": script["completeness"]},
        "appropriateness": {"score": script["appropriateness"]},
        "requirements": [],
        "requirements_score": script["requirements_score"],
    }
    theirs = compute_score("prompt_alignment", raw, case.options)
    assert theirs != ours.score
    assert explain(_outcome(case, mine, SideResult(theirs)), {}).rows == [
        "prompt-alignment-requirements"
    ]
    assert not explain(_outcome(case, mine, SideResult(theirs + 0.01)), {}).rows
    assert not explain(
        _outcome(case, SideResult(ours.score + 0.01), SideResult(theirs)), {}
    ).rows

    ranged = next(c for c in cases if "prompt-alignment-score-range" in c.rows)
    result_error = SideResult(None, error="JudgeError: out of range")
    check = ROW_CHECKS["prompt-alignment-score-range"]["prompt_alignment"]
    assert not check(_outcome(ranged, SideResult(0.5), SideResult(0.5)), {})
    assert not check(_outcome(ranged, result_error, SideResult(123.0)), {})

    blank = next(c for c in cases if "blank-reference" in c.rows)
    refused = SideResult(None, error="CaseError: needs a non-empty reference")
    assert explain(_outcome(blank, refused, SideResult(0)), {}).rows == [
        "blank-reference"
    ]
    assert not explain(_outcome(blank, refused, SideResult(0.5)), {}).rows

    folded = next(
        c
        for c in cases
        if c.kind == "noise_sensitivity" and "verdict-case-and-space" in c.rows
    )
    failed = SideResult(None, error="schema validation failed")
    assert explain(_outcome(folded, SideResult(0.7), failed), {}).rows == [
        "verdict-case-and-space"
    ]
    plain = next(c for c in cases if c.kind == "noise_sensitivity" and _plain(c))
    assert not explain(_outcome(plain, SideResult(0.7), failed), {}).rows
