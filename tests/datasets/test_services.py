from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import override_settings

from evalsite.celery import app
from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.services import (
    DatasetUploadError,
    dataset_create,
    dataset_create_from_path,
    dataset_preview,
)
from tests.datasets.conftest import upload

pytestmark = pytest.mark.django_db


def create(project, owner, file, **kwargs):
    return dataset_create(
        project=project,
        user=owner,
        file=file,
        name=kwargs.pop("name", "support"),
        **kwargs,
    )


def test_dataset_create_imports_rows_with_default_mapping(project, owner, good_csv):
    dataset = create(project, owner, good_csv)
    assert (dataset.version, dataset.item_count, dataset.file_format) == (1, 2, "csv")
    assert dataset.columns == ["input", "output", "context", "reference", "topic"]
    assert dataset.mapping["context"] == "context"
    assert dataset.source_filename == "support.csv"
    first = Item.objects.get(dataset=dataset, index=0)
    assert first.as_case() == {
        "input": "How do I export?",
        "output": "Use File > Export.",
        "context": ["Export is under File.", "PDF and Markdown are supported."],
        "reference": "File > Export",
        "metadata": {"topic": "export"},
    }


def test_dataset_create_same_name_makes_a_new_version(project, owner, good_csv):
    first = create(project, owner, good_csv)
    second = create(project, owner, upload("again.csv", "input,output\nq,a\n"))
    other = create(project, owner, upload("o.csv", "input,output\nq,a\n"), name="other")
    assert (first.version, second.version, other.version) == (1, 2, 1)
    assert second.item_count == 1


def test_default_mapping_guesses_delimited_context_from_the_first_rows(project, owner):
    dataset = create(
        project, owner, upload("x.csv", "input,output,context\nq,a,one || two\n")
    )
    assert dataset.mapping["context_format"] == "delimited"
    assert dataset.items.get().context == ["one", "two"]


def test_dataset_create_with_explicit_mapping_and_delimited_context(project, owner):
    data = "question;answer;docs;gold\nWhy?;Because.;a || b;ok\n"
    dataset = create(
        project,
        owner,
        upload("x.csv", data),
        mapping={
            "input": "question",
            "output": "answer",
            "context": "docs",
            "reference": "gold",
            "context_format": "delimited",
            "context_delimiter": "||",
        },
    )
    item = dataset.items.get()
    assert (item.input, item.context, item.reference, item.metadata) == (
        "Why?",
        ["a", "b"],
        "ok",
        {},
    )


def test_dataset_create_inserts_in_batches(
    project, owner, monkeypatch, django_assert_max_num_queries
):
    from evalsite.datasets import services

    monkeypatch.setattr(services, "BATCH_SIZE", 10)
    rows = "".join(f"q{i},a{i}\n" for i in range(95))
    dataset = create(project, owner, upload("big.csv", "input,output\n" + rows))
    assert dataset.item_count == 95
    assert list(dataset.items.values_list("index", flat=True)) == list(range(95))


def test_dataset_create_from_jsonl_and_json(project, owner):
    lines = [
        {
            "input": "q",
            "output": "a",
            "context": ["c"],
            "metadata": {"case_type": "faithful"},
        }
    ]
    jsonl = create(
        project,
        owner,
        upload("a.jsonl", "\n".join(json.dumps(x) for x in lines)),
        name="j",
    )
    arr = create(project, owner, upload("a.json", json.dumps(lines)), name="a")
    for dataset in (jsonl, arr):
        item = dataset.items.get()
        assert item.context == ["c"]
        assert item.metadata == {"case_type": "faithful"}


def test_dataset_create_from_path(project, owner, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"input": "q", "output": "a"}\n')
    dataset = dataset_create_from_path(
        project=project, user=owner, path=path, name="demo"
    )
    assert (dataset.item_count, dataset.source_filename, dataset.file_format) == (
        1,
        "cases.jsonl",
        "jsonl",
    )


def test_demo_data_imports_with_every_case_type(project, owner):
    from pathlib import Path

    import evalsite.datasets

    path = Path(evalsite.datasets.__file__).parent / "demo_data" / "support_rag.jsonl"
    dataset = dataset_create_from_path(
        project=project, user=owner, path=path, name="demo"
    )
    assert dataset.item_count >= 60
    kinds = [m["case_type"] for m in dataset.items.values_list("metadata", flat=True)]
    assert {
        "faithful",
        "unsupported_claim",
        "contradiction",
        "irrelevant_context",
    } <= set(kinds)
    assert kinds.count("faithful") >= dataset.item_count * 0.4
    for item in dataset.items.all():
        assert item.input and item.output and item.reference
        assert 2 <= len(item.context) <= 4


def test_dataset_preview_shows_first_rows_and_suggests_a_mapping():
    data = "question,answer\n" + "".join(f"q{i},a{i}\n" for i in range(20))
    preview = dataset_preview(file=upload("x.csv", data))
    assert preview.columns == ["question", "answer"]
    assert len(preview.rows) == 10
    assert (preview.mapping["input"], preview.mapping["output"]) == (
        "question",
        "answer",
    )


# ---------------------------------------------------------------- bad input


BAD_INPUTS = [
    pytest.param(
        "latin1.csv",
        "input,output\nq,café\n".encode("latin-1"),
        None,
        "Nothing was imported. row 1, column output: Byte 0xE9 is not UTF-8",
        ("row 1, column output", "Byte 0xE9 is not UTF-8"),
        id="not-utf8",
    ),
    pytest.param(
        "x.csv",
        b"question,answer\nq,a\n",
        {"input": "question", "output": "response"},
        "The CSV has no column 'response' (mapped to output).",
        ("column response", "The output column 'response' is not in the CSV header"),
        id="csv-missing-mapped-column",
    ),
    pytest.param(
        "x.jsonl",
        b'{"input": "q", "output": "a"}\n{"input": "q2", "output": "a2"\n',
        None,
        "Nothing was imported. row 2: Line 2 is not valid JSON",
        ("row 2", "Line 2 is not valid JSON"),
        id="malformed-jsonl-line",
    ),
    pytest.param(
        "x.csv",
        b"",
        None,
        "The file is empty (0 bytes).",
        ("file", "The file is empty"),
        id="empty-file",
    ),
    pytest.param(
        "x.csv",
        b"\n\n",
        None,
        "The file is empty: no header and no rows.",
        ("file", "The file is empty"),
        id="blank-file",
    ),
    pytest.param(
        "x.csv",
        b"input,output\n",
        None,
        "The file has a header but no rows.",
        ("file", "header but no rows"),
        id="no-rows",
    ),
    pytest.param(
        "x.json",
        b"[]",
        None,
        "The file is empty: the JSON array has no rows.",
        ("file", "no rows"),
        id="empty-array",
    ),
    pytest.param(
        "x.csv",
        b'input,output,context\nq,a,"[""ok""]"\nq,a,not a list\n',
        None,
        "Nothing was imported. row 2, column context: Context is not valid JSON",
        ("row 2, column context", "Context is not valid JSON"),
        id="context-not-json",
    ),
    pytest.param(
        "x.jsonl",
        b'{"input": "q", "output": "a", "context": "just text"}\n',
        {
            "input": "input",
            "output": "output",
            "context": "context",
            "context_format": "json",
        },
        "Nothing was imported. row 1, column context: Context is not valid JSON",
        ("row 1, column context", "Context is not valid JSON"),
        id="jsonl-context-string-not-list",
    ),
    pytest.param(
        "x.jsonl",
        b'{"input": "q", "output": "a", "context": {"a": "b"}}\n',
        None,
        "Nothing was imported. row 1, column context: Context is a JSON object, not a list of strings.",
        ("row 1, column context", "Context is a JSON object, not a list of strings."),
        id="context-object",
    ),
    pytest.param(
        "x.json",
        b'[{"input": "q", "output": "a"}, ["not", "an", "object"]]',
        None,
        "Nothing was imported. row 2: Element 2 of the array is a JSON array, not an object.",
        ("row 2", "Element 2 of the array is a JSON array, not an object."),
        id="non-object-json-row",
    ),
    pytest.param(
        "x.jsonl",
        b'{"input": "q", "output": "a"}\n"just a string"\n',
        None,
        "Nothing was imported. row 2: Line 2 is a JSON string, not an object.",
        ("row 2", "Line 2 is a JSON string, not an object."),
        id="non-object-jsonl-row",
    ),
    pytest.param(
        "x.csv",
        b"q_text,a_text\nq,a\n",
        None,
        "No column is named input or output, so the columns must be mapped.",
        ("column input", "Choose the column that holds the input."),
        id="no-default-mapping",
    ),
    pytest.param(
        "x.json",
        b'[{"input": "q", "output": "a"}, {"input": ]',
        None,
        "The JSON is malformed after element 1 of the array",
        ("row 2", "Malformed JSON"),
        id="broken-json-array",
    ),
]


@pytest.mark.parametrize(
    ("name", "data", "mapping", "message", "first_problem"), BAD_INPUTS
)
def test_bad_upload_gets_its_message_and_imports_nothing(
    project, owner, good_csv, name, data, mapping, message, first_problem
):
    create(project, owner, good_csv)  # an earlier dataset must be left alone
    before = (Dataset.objects.count(), Item.objects.count())
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, upload(name, data), mapping=mapping)
    assert exc.value.message.startswith(message), exc.value.message
    field, text = first_problem
    assert exc.value.problems[0].field == field
    assert text in exc.value.problems[0].message
    assert exc.value.field_errors[field] == exc.value.problems[0].message
    assert (Dataset.objects.count(), Item.objects.count()) == before


def test_bad_rows_after_many_good_batches_still_import_nothing(
    project, owner, monkeypatch
):
    from evalsite.datasets import services

    monkeypatch.setattr(services, "BATCH_SIZE", 5)
    rows = "".join(f'q{i},a{i},"[""c""]"\n' for i in range(40)) + "q,a,[1]\n"
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, upload("x.csv", "input,output,context\n" + rows))
    assert exc.value.problems[0].field == "row 41, column context"
    assert Dataset.objects.count() == 0
    assert Item.objects.count() == 0


def test_problems_are_listed_up_to_twenty(project, owner):
    rows = "".join(f"q{i},a{i},nope\n" for i in range(50))
    mapping = {
        "input": "input",
        "output": "output",
        "context": "context",
        "context_format": "json",
    }
    with pytest.raises(DatasetUploadError) as exc:
        create(
            project,
            owner,
            upload("x.csv", "input,output,context\n" + rows),
            mapping=mapping,
        )
    assert len(exc.value.problems) == 20
    assert [p.row for p in exc.value.problems] == list(range(1, 21))
    assert exc.value.message.startswith(
        "Nothing was imported: 20+ problems, the first at row 1, column context"
    )
    assert Item.objects.count() == 0


@override_settings(DATASET_MAX_UPLOAD_BYTES=100)
def test_file_over_the_size_limit_is_refused_before_parsing(
    project, owner, monkeypatch
):
    from evalsite.datasets import services

    def fail(*args, **kwargs):
        raise AssertionError("parsed an oversized file")

    monkeypatch.setattr(services, "parse_rows", fail)
    monkeypatch.setattr(services, "preview_rows", fail)
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, upload("x.csv", "input,output\n" + "q,a\n" * 40))
    assert (
        exc.value.message
        == "The file is 173 bytes, over the upload limit of 100 bytes. Split it into smaller files."
    )
    assert Dataset.objects.count() == 0


def test_dataset_create_requires_a_name(project, owner, good_csv):
    with pytest.raises(Exception, match="needs a name"):
        create(project, owner, good_csv, name="  ")


def test_invalid_mapping_is_refused(project, owner, good_csv):
    with pytest.raises(DatasetUploadError) as exc:
        create(
            project,
            owner,
            good_csv,
            mapping={"input": "input", "output": "output", "context_format": "yaml"},
        )
    assert exc.value.message.startswith("The column mapping is invalid")
    assert "context_format" in exc.value.field_errors["column context_format"]


def test_preview_of_a_file_with_no_readable_row_is_an_error():
    with pytest.raises(DatasetUploadError) as exc:
        dataset_preview(file=upload("x.jsonl", "not json\nnor this\n"))
    assert exc.value.message.startswith(
        "Nothing was imported: 2 problems, the first at row 1: Line 1 is not valid JSON"
    )


# ---------------------------------------------------------------- hostile input


def test_name_the_database_cannot_store_is_refused(project, owner, good_csv):
    with pytest.raises(ApplicationError) as exc:
        create(project, owner, good_csv, name="a\x00b")
    assert "NUL" in exc.value.field_errors["name"]
    assert Dataset.objects.count() == 0


def test_file_name_the_database_cannot_store_is_refused(project, owner):
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, upload("a\x00b.csv", "input,output\nq,a\n"))
    assert "NUL" in exc.value.message
    assert Dataset.objects.count() == 0


def test_mapping_the_database_cannot_store_is_refused(project, owner, good_csv):
    mapping = {
        "input": "input",
        "output": "output",
        "context": "context",
        "context_format": "delimited",
        "context_delimiter": "\x00",
    }
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, good_csv, mapping=mapping)
    assert "NUL" in exc.value.field_errors["column context_delimiter"]
    assert Dataset.objects.count() == 0


def test_limits_come_from_the_settings(project, owner, settings):
    settings.DATASET_MAX_CELL_CHARS = 10
    settings.DATASET_MAX_NESTING = 2
    data = (
        '{"input": "q", "output": "0123456789a"}\n'
        '{"input": "q", "output": "a", "m": []}\n'  # the row and a list: 2 levels
        '{"input": "q", "output": "a", "m": [[]]}\n'
    )
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, upload("x.jsonl", data))
    assert [(p.row, p.column) for p in exc.value.problems] == [
        (1, "output"),
        (3, "m"),
    ]
    assert "nested more than 2 levels" in exc.value.problems[1].message
    assert Dataset.objects.count() == 0


def test_file_without_an_output_column_is_not_imported_with_output_as_input(
    project, owner
):
    with pytest.raises(DatasetUploadError) as exc:
        create(project, owner, upload("x.csv", "input,notes\nq,n\n"))
    assert exc.value.message.startswith("No column is named output")
    assert exc.value.field_errors == {
        "column output": "Choose the column that holds the output."
    }
    # Chosen explicitly, any column may be the output.
    dataset = create(
        project,
        owner,
        upload("x.csv", "input,notes\nq,n\n"),
        mapping={"input": "input", "output": "notes"},
    )
    assert dataset.items.get().output == "n"


def test_large_rows_are_inserted_in_smaller_batches(project, owner, monkeypatch):
    from evalsite.datasets import services

    inserted = []
    real = services._insert_items
    monkeypatch.setattr(services, "BATCH_MAX_CHARS", 1000)
    monkeypatch.setattr(
        services,
        "_insert_items",
        lambda dataset, batch: inserted.append(len(batch)) or real(dataset, batch),
    )
    data = "input,output\n" + "".join(f"q{i},{'a' * 300}\n" for i in range(10))
    dataset = create(project, owner, upload("x.csv", data))
    assert dataset.items.count() == 10
    assert max(inserted) <= 4 and sum(inserted) == 10


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="planner statistics are Postgres's"
)
def test_an_upload_refreshes_the_items_statistics_once_it_commits(
    project, owner, django_capture_on_commit_callbacks
):
    """Until analyzed, Postgres plans reads of a new dataset as if its items were not
    there (a text search of 5,000 items took 1.6 s in the explorer, 20 ms after)."""
    app.loader.import_default_modules()  # a worker knows every task; tests must load them

    def planned_items() -> float:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples FROM pg_class WHERE relname = %s",
                [Item._meta.db_table],
            )
            return float(cursor.fetchone()[0])

    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Item._meta.db_table}")
    before = planned_items()
    rows = "".join(f'{{"input": "q{i}", "output": "a{i}"}}\n' for i in range(300))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        create(project, owner, upload("many.jsonl", rows), name="many")
    assert planned_items() == before  # inserting alone leaves them stale
    for callback in callbacks:
        callback()  # the commit: sends the task, which runs eagerly in tests
    assert planned_items() == before + 300
