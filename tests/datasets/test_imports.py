"""Imports from other tools, on files those tools wrote (tests/fixtures/imports).

promptfoo_results.json is real promptfoo 0.123.1 output (make_promptfoo_fixture.sh);
the Langfuse and LangSmith files follow their exporters' code, cited in the fixture
README.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.readers.services import import_preview
from evalsite.datasets.services import DatasetUploadError
from evalsite.evals.models import Result, Run
from evalsite.evals.results.verdicts import override_create
from evalsite.imports.services import import_create

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "imports"


def fixture(name: str, as_name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(as_name or name, (FIXTURES / name).read_bytes())


def upload(name: str, data: str | bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data.encode() if isinstance(data, str) else data)


def promptfoo_doc() -> dict:
    return json.loads((FIXTURES / "promptfoo_results.json").read_text())


# ---------------------------------------------------------------- promptfoo


@pytest.mark.django_db
def test_promptfoo_fixture_is_promptfoo_0_123_1():
    doc = promptfoo_doc()
    assert doc["metadata"]["promptfooVersion"] == "0.123.1"
    assert doc["results"]["version"] == 3


@pytest.mark.django_db
def test_imported_verdict_can_be_overridden_by_a_reviewer(project, owner):
    # model-b (the third prompt x provider) says Mars has one moon: category D.
    run = import_create(
        project=project, user=owner, file=fixture("promptfoo_results.json")
    ).runs[2]
    mars = Result.objects.get(run=run, item__index=3, run_scorer__name="factuality")
    assert mars.analysis["category"] == "D" and mars.judge_passed is False
    override = override_create(
        result=mars, user=owner, kind="verdict", path="category", value="E"
    )
    result = override.result
    assert result.final_analysis["category"] == "E"
    assert result.final_score == 1.0
    assert result.final_passed is True
    assert result.judge_passed is False  # the judge's verdict stays
    assert result.overridden and result.reviewed


@pytest.mark.django_db
def test_promptfoo_input_var_choice(project, owner):
    preview = import_preview(file=fixture("promptfoo_results.json"))
    assert preview.rows[0].input == "What is the capital of France?"
    assert preview.summary.input_choices == ["question", "(rendered prompt)"]
    preview = import_preview(
        file=fixture("promptfoo_results.json"), input_var="(rendered prompt)"
    )
    assert preview.rows[0].input == (
        "Answer in one sentence: What is the capital of France?"
    )
    with pytest.raises(DatasetUploadError, match="no var named 'nope'|var 'nope'"):
        import_preview(file=fixture("promptfoo_results.json"), input_var="nope")


@pytest.mark.django_db
def test_promptfoo_preview_counts_and_writes_nothing(project):
    preview = import_preview(file=fixture("promptfoo_results.json"))
    assert preview.tool == "promptfoo"
    assert preview.makes_run
    assert preview.summary.rows == 80
    assert preview.summary.details["promptfoo_version"] == "0.123.1"
    assert preview.summary.details["stats"] == {
        "successes": 49,
        "failures": 29,
        "errors": 2,
    }
    assert len(preview.summary.groups) == 4
    assert preview.summary.input_source == "var question"
    assert len(preview.rows) == 10
    assert not Dataset.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("version", [2, 4, "3", None])
def test_promptfoo_unknown_version_is_refused(project, owner, version):
    doc = promptfoo_doc()
    doc["results"]["version"] = version
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project,
            user=owner,
            file=upload("results.json", json.dumps(doc)),
            tool="promptfoo",
        )
    assert "version" in exc.value.message
    assert not Dataset.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_promptfoo_rows_without_factuality_make_no_factuality_scorer(project, owner):
    doc = promptfoo_doc()
    for row in doc["results"]["results"]:
        grading = row.get("gradingResult") or {}
        grading["componentResults"] = [
            c
            for c in grading.get("componentResults", [])
            if c["assertion"]["type"] != "factuality"
        ]
        row["testCase"]["assert"] = [
            a for a in row["testCase"]["assert"] if a["type"] != "factuality"
        ]
    outcome = import_create(
        project=project, user=owner, file=upload("r.json", json.dumps(doc))
    )
    # Each test's own result is still promptfoo's: one run per prompt x provider.
    assert len(outcome.runs) == 4
    assert {rs.name for rs in outcome.runs[0].run_scorers.all()} == {
        "llm-rubric",
        "contains",
        "javascript",
        "mentions-keyword",
        "promptfoo test",
    }


# ---------------------------------------------------------------- errors


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("x.csv", "a,b\n1,2\n", "not one evalsite can import"),
        (
            "x.json",
            '{"evalId": "e", "results": {"version": 3, "results": [',
            "malformed",
        ),
        (
            "x.json",
            '{"evalId": "e", "results": {"version": 3, "results": []}}',
            "no results",
        ),
        ("x.json", '{"evalId": "e", "results": {"results": [{}]}}', "version"),
        ("x.json", "", "empty"),
    ],
)
def test_bad_files_get_a_clear_error_and_import_nothing(
    project, owner, name, data, expected
):
    with pytest.raises(DatasetUploadError) as exc:
        import_create(project=project, user=owner, file=upload(name, data))
    assert (
        expected in exc.value.message.lower()
        or expected in str([p.message for p in exc.value.problems]).lower()
    )
    assert not Dataset.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_deeply_nested_promptfoo_row_is_refused(project, owner, settings):
    doc = promptfoo_doc()
    deep: object = "x"
    for _ in range(settings.DATASET_MAX_NESTING + 5):
        deep = {"a": deep}
    doc["results"]["results"][2]["testCase"]["metadata"] = deep
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project, user=owner, file=upload("r.json", json.dumps(doc))
        )
    assert "nested more than" in exc.value.message
    assert "results.results[3]" in exc.value.message
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_huge_promptfoo_value_is_refused_while_it_streams(project, owner, settings):
    settings.DATASET_MAX_CELL_CHARS = 1000
    doc = promptfoo_doc()
    doc["results"]["results"][1]["response"]["output"] = "y" * 100_000
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project, user=owner, file=upload("r.json", json.dumps(doc))
        )
    assert "characters long" in exc.value.message
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_huge_skipped_parts_cost_nothing(project, owner):
    """promptfoo's config (skipped) may be far larger than a row may be."""
    doc = promptfoo_doc()
    doc["config"]["huge"] = "z" * 6_000_000
    outcome = import_create(
        project=project, user=owner, file=upload("r.json", json.dumps(doc))
    )
    assert [d.item_count for d in outcome.datasets] == [20, 20, 20, 20]


@pytest.mark.django_db
def test_unknown_tool_is_refused(project, owner):
    with pytest.raises(ApplicationError, match="Unknown tool"):
        import_create(
            project=project,
            user=owner,
            file=fixture("promptfoo_results.json"),
            tool="braintrust",
        )


@pytest.mark.django_db
def test_a_failure_after_the_dataset_rolls_everything_back(project, owner, monkeypatch):
    from evalsite.evals.runs import imported as imported_runs

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(imported_runs, "_results_insert", boom)
    with pytest.raises(RuntimeError):
        import_create(
            project=project, user=owner, file=fixture("promptfoo_results.json")
        )
    assert not Dataset.objects.exists()
    assert not Run.objects.exists()
    assert not Item.objects.exists()


# ---------------------------------------------------------------- streaming reader


def _events(text: str, size: int, **limits):
    from evalsite.datasets.parsing.jsonscan import members
    from evalsite.datasets.parsing.limits import Limits

    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    events = members(
        chunks,
        limits=Limits(**limits),
        descend={(), ("results",)},
        split={("results", "results")},
        keep={("evalId",), ("results", "version")},
    )
    return list(events)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 1000])
def test_stream_reads_the_same_whatever_the_chunks(size):
    doc = {
        "evalId": 'e "1" \\ \u00e9',
        "skipped": {"deep": [[["x", {"y": 'a]}\\"b'}]]], "n": -1.5e3},
        "results": {
            "version": 3,
            "results": [{"a": 'q\\"}]'}, {"b": [1, 2, {"c": None}]}, "plain", 7],
            "stats": {"s": True},
        },
        "tail": [1, "2"],
    }
    events = _events(json.dumps(doc), size)
    values = {e[1]: json.loads(e[2]) for e in events if e[0] == "value"}
    elements = [json.loads(e[3]) for e in events if e[0] == "element"]
    assert values == {("evalId",): doc["evalId"], ("results", "version"): 3}
    assert elements == doc["results"]["results"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"results": {"results": [1, 2}}', "expected"),
        ('{"a": 1} {"b": 2}', "text after it"),
        ('{"a": "unterminated', "end of a string"),
        ("[1, 2]", "not one JSON object"),
    ],
)
def test_stream_names_malformed_json(text, message):
    from evalsite.datasets.parsing.limits import ParseError

    with pytest.raises(ParseError) as exc:
        _events(text, 3)
    assert message in exc.value.message


@pytest.mark.django_db
def test_skipping_a_huge_member_holds_little_memory():
    """A 40 MB string in a skipped member is read past in chunks, never held whole."""
    import tracemalloc

    doc = promptfoo_doc()
    doc["config"]["huge"] = "z" * 40_000_000
    file = upload("r.json", json.dumps(doc))
    tracemalloc.start()
    try:
        preview = import_preview(file=file)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert preview.summary.rows == 80
    assert peak < 15_000_000, peak  # measured 4.2 MB: a chunk or two as text, and rows
