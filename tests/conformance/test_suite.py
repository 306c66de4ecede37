"""The differential suite's own parts, without Node: the documented rows and the suite's
agree, the generated cases cover every row, the suite's mirror of ``scoring`` is exact,
and the scripted judge answers our steps with the script. ``make conformance`` runs the
real comparison."""

from __future__ import annotations

from collections import Counter

import pytest

from conformance.cases import KINDS_COMPARED, Case, generate
from conformance.judge_server import ScriptedJudge, scripted_judge
from conformance.rows import (
    ROWS,
    _mastra_reads,
    _promptfoo_letter,
    _utf16,
    documented_row_ids,
    explain,
    text_ratio,
)
from conformance.run import Outcome, SideResult
from scoring import (
    KINDS,
    OptionsError,
    analyze_text,
    judge_case,
    make_client,
    validate_options,
)


@pytest.fixture(scope="module")
def cases():
    return generate()


def test_documented_rows_are_the_suites():
    ids = documented_row_ids()
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(ROWS)


def test_documented_row_ids_are_read_from_the_section_only():
    text = (
        "| `elsewhere` | x |\n"
        "## Where our numbers differ from Mastra's and promptfoo's\n"
        "| `a-row` | x | y |\n| not-an-id | x |\n### LLM scorers\n| `sub-row` | x |\n"
        "## Next\n| `later` | x |\n"
    )
    assert documented_row_ids(text) == ["a-row", "sub-row"]
    # As the page's title, the section runs to the end of the page.
    page = "# Where our numbers differ from Mastra's and promptfoo's\n## LLM\n| `b-row` | x |\n"
    assert documented_row_ids(page) == ["b-row"]
    with pytest.raises(ValueError):
        documented_row_ids("## Something else\n| `c-row` | x |\n")


def test_cases_are_seeded_and_cover_every_kind_and_row(cases):
    assert len(cases) >= 2000
    assert [c.id for c in cases] == [c.id for c in generate()]
    assert len({c.id for c in cases}) == len(cases)
    kinds = Counter(c.kind for c in cases)
    # custom_rubric is ours alone; imported results are scored by the tool they came from
    assert (
        set(kinds) == set(KINDS_COMPARED) == set(KINDS) - {"custom_rubric", "imported"}
    )
    tagged = Counter(row for c in cases for row in c.rows)
    assert set(tagged) == set(ROWS)
    # Most cases must agree exactly: rows are for the few that exercise them, except
    # where the documented rule touches nearly every text (stopwords, compromise).
    untagged = sum(1 for c in cases if not c.rows)
    assert untagged > len(cases) / 2


def test_the_suites_mirror_of_ours_is_exact(cases):
    for case in cases:
        if case.script is not None:
            continue
        try:
            ours = analyze_text(case.kind, case.item, case.options)["ratio"]
        except Exception:
            continue
        outcome = Outcome(case, SideResult(ours), SideResult(None), ScriptedJudge({}))
        assert text_ratio(outcome, frozenset(), {}) == ours, case.id


@pytest.mark.parametrize(
    ("kind", "raw", "read"),
    [
        ("faithfulness", "YES", "no"),
        ("faithfulness", "yes", "yes"),
        ("hallucination", " yes", "no"),
        ("bias", "Yes", "yes"),
        ("bias", " yes", "no"),
        ("toxicity", " YES ", "yes"),
        ("context_precision", "Yes\n", "yes"),
        ("answer_relevancy", " Unsure", "unsure"),
        ("answer_relevancy", "maybe", "no"),
        ("hallucination", "unsure", "no"),
        # JavaScript's trim(): U+FEFF is whitespace, U+0085 is not
        ("answer_relevancy", "yes\ufeff", "yes"),
        ("toxicity", "yes\x85", "no"),
        ("faithfulness", "yes\ufeff", "no"),
        ("context_precision", "ＹＥＳ", "no"),
        ("toxicity", True, "no"),
    ],
)
def test_how_mastra_reads_verdicts(kind, raw, read):
    assert _mastra_reads(kind, raw) == read


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("After comparing both, the answer is (C). Fine.", "C"),
        ("The details are discussed elsewhere (see above).", "E"),
        ("C", None),
        ("B. more detail", None),
        ('{"category": "(A)", "reason": "x"}', None),
        ("I cannot decide.", None),
        # a leading letter, then a parenthesis: the pattern's first match
        ("A. It is not (B) because details differ.", "B"),
        ("B. The answer covers it (see above)", "E"),
        ('{"reason": "r"}\nAnswer: (C)', "C"),
    ],
)
def test_how_promptfoo_reads_an_unparseable_reply(reply, letter):
    assert _promptfoo_letter(reply) == letter


def test_utf16_splits_astral_characters():
    assert len(_utf16("a😀b")) == 4
    assert _utf16("abc") == "abc"


def test_the_scripted_judge_answers_our_steps(cases):
    case = next(
        c
        for c in cases
        if c.kind == "answer_relevancy" and not c.rows and c.script["items"]
    )
    judge = ScriptedJudge({case.id: case.script})
    with scripted_judge(judge) as url:
        client = make_client(f"{url}/v1", "x").with_options(
            default_headers={
                "x-conformance-case": case.id,
                "x-conformance-side": "ours",
            }
        )
        result = judge_case(case.kind, case.item, case.options, client, model="m")
    assert [v["verdict"] for v in result.analysis["verdicts"]] == [
        v.strip().lower() for v in case.script["verdicts"]
    ]
    assert result.analysis["statements"] == case.script["items"]
    assert judge.calls["ours"] == 3  # statements, verdicts, reason
    assert case.script["items"][0] in "\n".join(judge.prompts[case.id]["ours"])


def _range_outcome(reply, scores, theirs_score, theirs_pass, rows=()):
    options = {"category_scores": scores}
    case = Case(
        id="factuality-x",
        kind="factuality",
        item={"input": "q", "output": "a", "reference": "r"},
        options=options,
        theirs={},
        script={"kind": "factuality", "reply": reply},
        rows=["factuality-category-score-range", *rows],
    )
    with pytest.raises(OptionsError) as info:
        validate_options("factuality", options)
    ours = SideResult(None, error=f"OptionsError: {info.value}")
    return Outcome(
        case, ours, SideResult(theirs_score, passed=theirs_pass), ScriptedJudge({})
    )


@pytest.mark.parametrize(
    ("reply", "scores", "theirs", "rows"),
    [
        ('{"category": "D", "reason": "r"}', {"disagree": -1}, (-1, False), ()),
        ('{"category": "B", "reason": "r"}', {"superset": 2}, (2, True), ()),
        # a category the case did not change: promptfoo's default
        ('{"category": "A", "reason": "r"}', {"superset": 2}, (1, True), ()),
        ("C", {"agree": 2}, (0, False), ("factuality-lone-letter",)),
        (
            "(see above)",
            {"differ_but_factual": -1},
            (-1, False),
            ("factuality-unparseable",),
        ),
    ],
)
def test_category_score_range_row_reproduces_promptfoo(reply, scores, theirs, rows):
    outcome = _range_outcome(reply, scores, *theirs, rows=rows)
    expected = ["factuality-category-score-range", *rows]
    assert explain(outcome, {}).rows == expected
    # Any other number of theirs is not explained by the row.
    wrong = _range_outcome(reply, scores, 0.5, True, rows=rows)
    assert explain(wrong, {}).rows == []


def _factuality_outcome(reply, ours_score, theirs_score, theirs_pass, rows):
    case = Case(
        id="factuality-y",
        kind="factuality",
        item={"input": "q", "output": "a", "reference": "r"},
        options={},
        theirs={},
        script={"kind": "factuality", "reply": reply},
        rows=list(rows),
    )
    return Outcome(
        case,
        SideResult(ours_score),
        SideResult(theirs_score, passed=theirs_pass),
        ScriptedJudge({}),
    )


def test_mixed_letters_row_reproduces_promptfoo_only_with_its_letter():
    reply = "A. It is not (D) because details differ."  # ours A (1), promptfoo D (0)
    rows = ["factuality-mixed-letters"]
    assert explain(_factuality_outcome(reply, 1.0, 0.0, False, rows), {}).rows == rows
    assert explain(_factuality_outcome(reply, 1.0, 0.0, True, rows), {}).rows == []
    assert explain(_factuality_outcome(reply, 0.0, 0.0, False, rows), {}).rows == []


def test_cases_hold_the_widened_shapes(cases):
    scripts = [c.script for c in cases if c.script]
    assert sum(1 for s in scripts if s.get("wrap")) >= 100
    replies = [s["reply"] for s in scripts if s["kind"] == "factuality"]
    assert any(r.startswith("{") and not r.endswith("}") for r in replies)
    assert any("factuality-mixed-letters" in c.rows for c in cases)
    flags = [
        e["used"]
        for s in scripts
        if s["kind"] == "context_relevance"
        for e in s["evaluations"]
    ]
    assert any(not isinstance(f, bool) for f in flags)
    assert any(
        not isinstance(v, bool)
        for s in scripts
        if s["kind"] == "summarization"
        for v in s["claims"] + s["coverage"]
    )
    texts = "".join(c.item.get("output") or "" for c in cases if not c.script)
    assert "\U00010d50" in texts and "İ" in texts and "Σ" in texts
