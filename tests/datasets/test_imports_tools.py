"""Langfuse and LangSmith dataset exports imported as datasets (no verdicts: no run)."""

from __future__ import annotations

import pytest

from evalsite.datasets.imports.services import import_detect, import_preview
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.services import DatasetUploadError
from evalsite.evals.models import Run
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
    assert "Archived in Langfuse: 1 item," in warnings
    assert "Chat messages as input: 1 item," in warnings


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
def test_langsmith_experiment_csv_has_outputs_and_references(project, owner):
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
    assert "feedback scores" in warnings
    assert "no model output" not in warnings


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
