"""Langfuse and LangSmith exports imported as datasets, and a LangSmith experiment's
feedback scores as a finished run."""

from __future__ import annotations

import pytest

from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.readers.services import import_detect, import_preview
from evalsite.datasets.services import DatasetUploadError
from evalsite.evals.models import Result, Run
from evalsite.review.services.imports import import_create
from tests.datasets.test_imports import fixture, upload


def items_of(dataset: Dataset) -> list[Item]:
    return list(Item.objects.filter(dataset=dataset).order_by("index"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", ["langfuse_dataset_items.csv", "langfuse_dataset_items.jsonl"]
)
def test_langfuse_items_round_trip(project, owner, name):
    outcome = import_create(project=project, user=owner, file=fixture(name))
    assert outcome.run is None
    assert not Run.objects.exists()
    assert outcome.summary.tool == "langfuse"
    capital, hamlet, mars = items_of(outcome.dataset)
    # A string input and expected output, as they are.
    assert capital.input == "What is the capital of France?"
    assert capital.reference == "Paris"
    assert capital.output == ""
    assert capital.metadata["topic"] == "geography"
    lf = capital.metadata["langfuse"]
    assert lf["id"] == "item-capital"
    assert lf["datasetName"] == "capitals-and-moons"
    assert lf["status"] == "ACTIVE"
    # The CSV's dates are JSON strings in their cells: read back as the date.
    assert lf["createdAt"] == "2026-11-20T09:15:00.000Z"
    assert "sourceTraceId" not in lf  # null in the export
    # Object input and expected output: their question/answer key; the whole kept.
    assert hamlet.input == "Who wrote Hamlet?"
    assert hamlet.reference == "William Shakespeare"
    assert hamlet.metadata["langfuse"]["input"] == {
        "question": "Who wrote Hamlet?",
        "language": "en",
    }
    assert hamlet.metadata["langfuse"]["sourceTraceId"] == "trace-7f3a"
    assert hamlet.metadata["langfuse"]["htmlSourcePath"].endswith(
        "/traces/trace-7f3a?observation=obs-91c2"
    )
    # Chat messages: the conversation, the last user message, the system prompt.
    assert mars.input == "How many moons does Mars have?"
    assert mars.system_prompt == "You are a terse astronomer."
    assert [m["role"] for m in mars.conversation] == ["system", "user"]
    assert mars.metadata["difficulty"] == 2
    warnings = " ".join(outcome.summary.warnings)
    assert "no model output" in warnings
    # item-pluto is archived: left out, as Langfuse's experiments leave it out.
    assert outcome.dataset.item_count == 3
    assert "Archived in Langfuse: 1 item left out" in warnings
    assert "Chat messages as input: 1 item," in warnings


@pytest.mark.django_db
def test_langfuse_file_of_archived_items_only_is_refused(project, owner):
    lines = fixture("langfuse_dataset_items.jsonl").read().decode().splitlines()
    archived = [line for line in lines if '"ARCHIVED"' in line]
    assert len(archived) == 1
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project, user=owner, file=upload("lf.jsonl", archived[0] + "\n")
        )
    assert "Every item in this Langfuse export is archived (1)" in exc.value.message
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_langsmith_examples_jsonl_round_trip(project, owner):
    outcome = import_create(
        project=project, user=owner, file=fixture("langsmith_examples.jsonl")
    )
    assert outcome.summary.tool == "langsmith"
    assert outcome.run is None
    capital, hamlet, mars = items_of(outcome.dataset)
    assert capital.input == "What is the capital of France?"
    assert capital.reference == "Paris"
    assert capital.output == ""
    assert capital.metadata["dataset_split"] == ["base"]
    assert capital.metadata["langsmith"]["id"].endswith("000000000001")
    # Several input keys: the question is the input, all of them kept.
    assert hamlet.input == "Who wrote Hamlet?"
    assert hamlet.metadata["langsmith"]["inputs"]["context"] == "Elizabethan drama"
    assert hamlet.reference == "William Shakespeare"
    assert hamlet.metadata["langsmith"]["outputs"]["year"] == 1600
    assert hamlet.metadata["langsmith"]["source_run_id"].endswith("aaaa")
    assert mars.conversation is not None and mars.input.startswith("How many moons")
    assert mars.reference == "Two: Phobos and Deimos."


@pytest.mark.django_db
def test_langsmith_experiment_csv_has_outputs_references_and_its_grades(project, owner):
    outcome = import_create(
        project=project, user=owner, file=fixture("langsmith_experiment.csv")
    )
    first, second, third = items_of(outcome.dataset)
    assert first.input == "What is the capital of France?"
    assert first.output == "Paris is the capital of France."
    assert first.reference == "Paris"
    assert first.metadata["langsmith"]["feedback"] == {"correctness": 1}
    assert first.metadata["langsmith"]["example_id"].endswith("000000000001")
    assert third.output == ""
    assert "TimeoutError" in third.metadata["langsmith"]["error"]
    warnings = " ".join(outcome.summary.warnings)
    assert "no model output" not in warnings
    # feedback.correctness (1, 1, 0) is the run's scorer with LangSmith's scores.
    run = outcome.run
    assert run is not None and run.status == Run.Status.DONE and run.total == 3
    results = Result.objects.filter(run=run).order_by("item__index")
    assert [r.run_scorer.name for r in results] == ["correctness"] * 3
    assert [r.run_scorer.kind for r in results] == ["imported"] * 3
    assert [r.judge_score for r in results] == [1.0, 1.0, 0.0]
    assert [r.final_passed for r in results] == [True, True, False]


def _feedback_results(outcome) -> dict[tuple[int, str], Result]:
    return {
        (r.item.index, r.run_scorer.name): r
        for r in Result.objects.filter(run=outcome.run).select_related(
            "item", "run_scorer"
        )
    }


@pytest.mark.django_db
def test_langsmith_feedback_scores_become_a_finished_run(project, owner):
    """The SDK's own to_pandas() of an experiment without reference outputs, written
    by pandas (make_langsmith_experiment.py)."""
    outcome = import_create(
        project=project, user=owner, file=fixture("langsmith_experiment_feedback.csv")
    )
    capital, hamlet, mars, timeout = items_of(outcome.dataset)
    # outputs.<key> is the model's output, even with no reference.<key> columns.
    assert capital.output == "Paris is the capital of France."
    assert capital.reference == ""
    assert hamlet.output == "Christopher Marlowe."
    # pandas writes a list of dicts as Python's repr: still the conversation.
    assert mars.input == "How many moons does Mars have?"
    assert mars.system_prompt == "You are a terse astronomer."
    assert [m["role"] for m in mars.conversation] == ["system", "user"]
    assert timeout.output == ""
    assert "TimeoutError" in timeout.metadata["langsmith"]["error"]

    results = _feedback_results(outcome)
    # correctness: True/False; helpfulness: 0-1 (mars's evaluator gave none);
    # tone is a value ("friendly"), not a score: no scorer, kept in metadata.
    assert sorted(results) == [
        (0, "correctness"),
        (0, "helpfulness"),
        (1, "correctness"),
        (1, "helpfulness"),
        (2, "correctness"),
        (3, "correctness"),
        (3, "helpfulness"),
    ]
    expected = {
        (0, "correctness"): (1.0, True),
        (0, "helpfulness"): (0.75, True),
        (1, "correctness"): (0.0, False),
        (1, "helpfulness"): (0.3, False),
        (2, "correctness"): (1.0, True),
        (3, "correctness"): (0.0, False),
        (3, "helpfulness"): (0.0, False),
    }
    for key, (score, passed) in expected.items():
        result = results[key]
        assert result.status == Result.Status.OK
        assert (result.judge_score, result.judge_passed) == (score, passed), key
        assert (result.final_score, result.final_passed) == (score, passed), key
        assert result.run_scorer.kind == "imported"
    assert capital.metadata["langsmith"]["feedback"]["tone"] == "friendly"
    run = outcome.run
    assert run.status == Run.Status.DONE and run.total == 7
    assert outcome.summary.verdicts == {"pass": 3, "fail": 4}
    warnings = " ".join(outcome.summary.warnings)
    assert "a score of 0.5 or more passes" in warnings
    assert "feedback.tone holds a value, not a score, in 2 rows" in warnings
    assert "feedback.helpfulness is empty in 1 row" in warnings


@pytest.mark.django_db
def test_langsmith_feedback_score_outside_0_1_is_refused(project, owner):
    data = fixture("langsmith_experiment_feedback.csv").read().decode()
    assert ",True,0.75,friendly," in data
    data = data.replace(",True,0.75,friendly,", ",True,4,friendly,")
    with pytest.raises(DatasetUploadError) as exc:
        import_create(project=project, user=owner, file=upload("ls.csv", data))
    assert "feedback.helpfulness is 4, outside 0-1" in exc.value.message
    assert [p.field for p in exc.value.problems] == [
        "row 1, column feedback.helpfulness"
    ]
    assert not Dataset.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_langsmith_csv_with_json_cells_and_prefixed_columns(project, owner):
    json_cells = (
        "inputs,outputs,metadata\n"
        '"{""question"": ""Q1""}","{""answer"": ""A1""}","{""k"": 1}"\n'
    )
    outcome = import_create(
        project=project, user=owner, file=upload("ls.csv", json_cells), name="a"
    )
    (item,) = items_of(outcome.dataset)
    assert (item.input, item.reference, item.metadata["k"]) == ("Q1", "A1", 1)
    prefixed = "input_question,output_answer\nQ2,A2\n"
    outcome = import_create(
        project=project,
        user=owner,
        file=upload("p.csv", prefixed),
        tool="langsmith",
        name="b",
    )
    (item,) = items_of(outcome.dataset)
    assert (item.input, item.reference) == ("Q2", "A2")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "tool"),
    [
        ("promptfoo_results.json", "promptfoo"),
        ("langfuse_dataset_items.csv", "langfuse"),
        ("langfuse_dataset_items.jsonl", "langfuse"),
        ("langsmith_examples.jsonl", "langsmith"),
        ("langsmith_experiment.csv", "langsmith"),
    ],
)
def test_auto_detection(name, tool):
    assert import_detect(file=fixture(name))[0] == tool


@pytest.mark.django_db
def test_wrong_tool_override_is_a_clear_error(project, owner):
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project,
            user=owner,
            file=fixture("langsmith_examples.jsonl"),
            tool="langfuse",
        )
    assert "no input column" in exc.value.message
    with pytest.raises(DatasetUploadError) as exc:
        import_create(
            project=project,
            user=owner,
            file=fixture("langfuse_dataset_items.csv"),
            tool="promptfoo",
        )
    assert "not one JSON object" in exc.value.message
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_malformed_rows_are_listed_and_nothing_is_imported(project, owner):
    data = (
        '{"input": "q1", "expectedOutput": "a1", "datasetId": "d"}\n'
        '{"input": "q2", "expectedOutput": \n'
        '{"expectedOutput": "a3", "datasetId": "d"}\n'
    )
    with pytest.raises(DatasetUploadError) as exc:
        import_create(project=project, user=owner, file=upload("lf.jsonl", data))
    fields = [p.field for p in exc.value.problems]
    assert fields == ["row 2", "row 3, column input"]
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_langfuse_csv_cell_nested_too_deep_stays_text(project, owner, settings):
    deep = "[" * (settings.DATASET_MAX_NESTING + 3) + "]" * (
        settings.DATASET_MAX_NESTING + 3
    )
    data = f'"input","expectedOutput","datasetId"\n"{deep}","a","d"\n'
    preview = import_preview(file=upload("lf.csv", data))
    assert preview.rows[0].input == deep


@pytest.mark.django_db
def test_versions_under_one_name(project, owner):
    first = import_create(
        project=project, user=owner, file=fixture("langsmith_examples.jsonl"), name="x"
    ).dataset
    second = import_create(
        project=project, user=owner, file=fixture("langsmith_examples.jsonl"), name="x"
    ).dataset
    assert (first.version, second.version) == (1, 2)


@pytest.mark.django_db
def test_items_larger_than_the_limit_once_read_are_refused_by_name(
    project, owner, settings
):
    """A CSV under the limit can grow as JSON Lines; the error says so."""
    data = fixture("langfuse_dataset_items.csv").read()
    settings.DATASET_MAX_UPLOAD_BYTES = len(data) + 10
    with pytest.raises(DatasetUploadError) as exc:
        import_create(project=project, user=owner, file=upload("lf.csv", data))
    assert "items read from this file" in exc.value.message
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_langfuse_json_array_export(project, owner):
    """Langfuse's JSON export (transformStreamToJson): the same rows in one array."""
    lines = fixture("langfuse_dataset_items.jsonl").read().decode().splitlines()
    data = "[" + ",".join(lines) + "]"
    outcome = import_create(project=project, user=owner, file=upload("lf.json", data))
    assert outcome.summary.tool == "langfuse"
    assert [i.reference for i in items_of(outcome.dataset)] == [
        "Paris",
        "William Shakespeare",
        "Two: Phobos and Deimos.",
    ]
