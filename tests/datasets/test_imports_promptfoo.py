"""promptfoo round trip on the real tool's files (tests/fixtures/imports/make_promptfoo.py
ran promptfoo 0.123.1 against a fake OpenAI server): every figure the import stores is
recounted here from the file itself, never from the importer's code."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.accounts.models import AuditEvent
from evalsite.datasets.imports.services import import_preview
from evalsite.datasets.services import DatasetUploadError
from evalsite.evals.models import Result, Run
from evalsite.review.services.imports import import_create
from evalsite.review.services.overrides import override_create

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "imports"
DOC = json.loads((FIXTURES / "promptfoo_results.json").read_text())
ROWS = DOC["results"]["results"]


def fixture(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FIXTURES / name).read_bytes())


def _runs(outcome) -> dict[int, Run]:
    """The imported runs by promptfoo's promptIdx (the run name starts "#<idx+1> ")."""
    by_index = {}
    for run in outcome.runs:
        label = run.name.split(" · ", 1)[1]
        by_index[int(label.split(" ", 1)[0].lstrip("#")) - 1] = run
    return by_index


def test_fixture_is_a_real_promptfoo_0_123_1_run_of_20_tests_2_prompts_2_providers():
    assert DOC["metadata"]["promptfooVersion"] == "0.123.1"
    assert len({r["testIdx"] for r in ROWS}) == 20
    assert len({r["promptIdx"] for r in ROWS}) == 4
    types = {
        c["assertion"]["type"]
        for r in ROWS
        for c in (r.get("gradingResult") or {}).get("componentResults", [])
    }
    assert types == {"factuality", "llm-rubric", "contains", "javascript"}


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["promptfoo_results.json", "promptfoo_results.jsonl"])
def test_each_prompt_x_provider_is_a_run_whose_totals_are_promptfoos(
    project, owner, name
):
    outcome = import_create(project=project, user=owner, file=fixture(name))
    runs = _runs(outcome)
    assert sorted(runs) == [0, 1, 2, 3]
    # One dataset name, one version per run, each with the 20 tests.
    assert {d.name for d in outcome.datasets} == {"promptfoo_results"}
    assert [d.item_count for d in outcome.datasets] == [20, 20, 20, 20]
    stats = Counter()
    for idx, prompt in enumerate(DOC["results"]["prompts"]):
        run = runs[idx]
        assert prompt["provider"] in run.name
        tests = Result.objects.filter(run=run, run_scorer__name="promptfoo test")
        passed = tests.filter(status="ok", final_passed=True).count()
        failed = tests.filter(status="ok", final_passed=False).count()
        errors = tests.filter(status="error").count()
        metrics = prompt["metrics"]
        assert (passed, failed, errors) == (
            metrics["testPassCount"],
            metrics["testFailCount"],
            metrics["testErrorCount"],
        )
        stats.update(successes=passed, failures=failed, errors=errors)
        # The assertions: promptfoo's passes are ours; its failures are our failures
        # plus the grader replies it could not read (errors here, as our factuality
        # scorer treats them).
        checks = Result.objects.filter(run=run).exclude(
            run_scorer__name="promptfoo test"
        )
        ok_rows = {
            r["testIdx"]
            for r in ROWS
            if r["promptIdx"] == idx and r["failureReason"] != 2
        }
        check_results = checks.filter(item__metadata__promptfoo__test_index__in=ok_rows)
        assert (
            check_results.filter(final_passed=True).count()
            == metrics["assertPassCount"]
        )
        assert (
            check_results.filter(status="ok", final_passed=False).count()
            + check_results.filter(status="error").count()
            == metrics["assertFailCount"]
        )
        assert run.status == Run.Status.DONE_WITH_ERRORS or errors == 0
    assert dict(stats) == {
        k: DOC["results"]["stats"][k] for k in ("successes", "failures", "errors")
    }
    event = AuditEvent.objects.get(action="import.create")
    assert event.after["run_ids"] == [r.pk for r in outcome.runs]


@pytest.mark.django_db
def test_every_assertion_is_a_result_with_promptfoos_pass_score_and_reason(
    project, owner
):
    outcome = import_create(
        project=project, user=owner, file=fixture("promptfoo_results.json")
    )
    runs = _runs(outcome)
    names = {rs.name for rs in runs[0].run_scorers.all()}
    assert {
        "llm-rubric",
        "contains",
        "javascript",
        "mentions-keyword",
        "factuality",
    } <= names
    assert {rs.kind for rs in runs[0].run_scorers.all()} == {"factuality", "imported"}
    checked = failed_not_error = 0
    for row in ROWS:
        run = runs[row["promptIdx"]]
        results = {
            r.run_scorer.name: r
            for r in Result.objects.filter(
                run=run, item__metadata__promptfoo__test_index=row["testIdx"]
            ).select_related("run_scorer")
        }
        assert results["promptfoo test"].item.output == row["response"].get(
            "output", ""
        )
        for comp in (row.get("gradingResult") or {}).get("componentResults", []):
            kind = comp["assertion"]["type"]
            if kind == "factuality":
                result = next(
                    r for n, r in results.items() if n.startswith("factuality")
                )
                if comp["reason"].startswith("Factuality checker output did not match"):
                    assert result.status == "error"
                    assert comp["reason"] in result.error
                    continue
            else:
                result = results[comp["assertion"].get("metric") or kind]
            assert result.status == "ok"
            assert result.judge_passed is comp["pass"]
            assert result.final_passed is comp["pass"]
            assert result.judge_score == pytest.approx(comp["score"])
            assert result.reason == comp["reason"]
            failed_not_error += not comp["pass"]
            checked += 1
    assert checked > 250 and failed_not_error > 20


@pytest.mark.django_db
def test_factuality_keeps_promptfoos_verdict_and_each_tests_own_category_scores(
    project, owner
):
    outcome = import_create(
        project=project, user=owner, file=fixture("promptfoo_results.json")
    )
    run = _runs(outcome)[0]
    # The grader said B with a reason opening "Category D:": promptfoo passed it.
    flip = Result.objects.get(
        run=run, run_scorer__name="factuality", item__metadata__promptfoo__test_index=2
    )
    assert flip.reason.startswith("Category D:")
    assert flip.analysis["category"] != "D" and flip.final_passed is True
    # Tests 7 and 17 have their own category scores: their own scorer, their score.
    for test, score in ((6, 0.4), (16, 0.6)):
        result = Result.objects.select_related("run_scorer").get(
            run=run,
            run_scorer__kind="factuality",
            item__metadata__promptfoo__test_index=test,
        )
        own = next(r for r in ROWS if r["testIdx"] == test)["testCase"]["options"]
        assert result.run_scorer.name != "factuality"
        expected = {
            "subset": own["factuality"]["subset"],
            "differ_but_factual": own["factuality"]["differButFactual"],
        }
        for key, value in expected.items():
            assert result.run_scorer.options["category_scores"][key] == value
        assert result.judge_score == pytest.approx(score)


def _with_out_of_range_categories() -> SimpleUploadedFile:
    """The fixture as promptfoo writes it when test 17's own factuality scores are
    subset 1.5, superset 1.5, agree 2, disagree -1, differButFactual 0 (promptfoo takes
    any number): its factuality grades score the grade's category under those (A 1.5
    where the file has 0.6, C 2 where it has 1), and the test's score is the mean of its
    assertions' scores, as promptfoo computes it."""
    doc = copy.deepcopy(DOC)
    own = {
        "subset": 1.5,
        "superset": 1.5,
        "agree": 2,
        "disagree": -1,
        "differButFactual": 0,
    }
    new_score = {0.6: 1.5, 1: 2}
    for row in doc["results"]["results"]:
        if row["testIdx"] != 16:
            continue
        row["testCase"]["options"]["factuality"] = dict(own)
        comps = row["gradingResult"]["componentResults"]
        for comp in comps:
            if comp["assertion"]["type"] == "factuality":
                comp["score"] = new_score[comp["score"]]
        row["score"] = row["gradingResult"]["score"] = sum(
            c["score"] for c in comps
        ) / len(comps)
    return SimpleUploadedFile("promptfoo_results.json", json.dumps(doc).encode("utf-8"))


@pytest.mark.django_db
def test_own_category_scores_outside_0_1_are_clamped_and_counted(project, owner):
    preview = import_preview(file=_with_out_of_range_categories())
    warnings = " ".join(preview.summary.warnings)
    # Test 17's factuality grade in each of the 4 prompt x provider runs.
    assert "4 factuality grades came from tests whose own category scores" in warnings
    # Its test scores (1.025 and 1.25) are clamped too.
    assert "4 grades had a score outside 0-1" in warnings

    outcome = import_create(
        project=project, user=owner, file=_with_out_of_range_categories()
    )
    results = Result.objects.select_related("run_scorer").filter(
        run__in=outcome.runs, item__metadata__promptfoo__test_index=16
    )
    factuality = [r for r in results if r.run_scorer.kind == "factuality"]
    assert len(factuality) == 4
    for result in factuality:
        assert result.run_scorer.options["category_scores"] == {
            "subset": 1.0,
            "superset": 1.0,
            "agree": 1.0,
            "disagree": 0.0,
            "differ_but_factual": 0.0,
        }
        # promptfoo recorded 1.5 or 2 and a pass: 1 (the scale) and a pass here.
        assert result.judge_score == 1.0 and result.judge_passed is True
    assert sorted(r.analysis["category"] for r in factuality) == ["A", "A", "C", "C"]
    tests = [r for r in results if r.run_scorer.name == "promptfoo test"]
    assert [r.judge_score for r in tests] == [1.0] * 4
    # Every other test keeps its own scores: test 7's 0.4 is untouched.
    other = Result.objects.get(
        run=_runs(outcome)[0],
        run_scorer__kind="factuality",
        item__metadata__promptfoo__test_index=6,
    )
    assert other.judge_score == pytest.approx(0.4)


@pytest.mark.django_db
def test_a_reviewer_flips_an_imported_grade_and_the_figures_follow(project, owner):
    outcome = import_create(
        project=project, user=owner, file=fixture("promptfoo_results.json")
    )
    result = Result.objects.filter(
        run=outcome.runs[0], run_scorer__name="llm-rubric", final_passed=True
    ).first()
    override_create(
        result=result, user=owner, kind="verdict", path="passed", value=False
    )
    result.refresh_from_db()
    assert result.final_passed is False and result.judge_passed is True
    assert result.final_score == result.judge_score


@pytest.mark.django_db
def test_promptfoo_csv_is_refused_naming_the_supported_forms(project, owner):
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project, user=owner, file=fixture("promptfoo_results.csv")
        )
    message = exc.value.message
    assert "-o results.csv" in message
    assert "`promptfoo eval -o results.json`" in message
    assert "`promptfoo eval -o results.jsonl`" in message
    with pytest.raises(DatasetUploadError, match="results.jsonl"):
        import_create(
            project=project,
            user=owner,
            file=fixture("promptfoo_results.csv"),
            tool="promptfoo",
        )
