"""Keys per row and metadata keys per item are capped like CSV columns (500), on every
way a file comes in, and pages show a bounded part of what a dataset has (issue 27,
item 4: one JSONL row of 200,000 keys took the mapping page 4 minutes and 1 GB)."""

from __future__ import annotations

import io
import json

import pytest
from django.urls import reverse

from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.parsing.limits import MAX_COLUMNS, Problem
from evalsite.datasets.parsing.mapping import Mapping
from evalsite.datasets.parsing.rows import parse_rows
from evalsite.datasets.services import dataset_create
from tests.conftest import bearer, login
from tests.datasets.conftest import upload
from tests.datasets.test_imports import promptfoo_doc


def jsonl_row(keys: int, *, nested: int = 0) -> str:
    """One JSON Lines row: input, output and `keys` - 2 other keys in all (and a
    "metadata" object of `nested` keys when asked)."""
    row: dict = {"input": "q", "output": "a"}
    row.update({f"k{i}": i for i in range(keys - 2)})
    if nested:
        row["metadata"] = {f"m{i}": i for i in range(nested)}
    return json.dumps(row) + "\n"


IO = Mapping(input="input", output="output")


def parsed(data: str, fmt: str = "jsonl") -> list:
    return list(parse_rows(io.BytesIO(data.encode()), file_format=fmt, mapping=IO))


def test_the_limit_is_the_csv_header_limit():
    assert MAX_COLUMNS == 500


@pytest.mark.parametrize("keys", [200_000, 600, 501])
def test_a_jsonl_row_over_the_key_limit_is_a_row_problem(keys):
    out = parsed(jsonl_row(2) + jsonl_row(keys))
    assert out[1] == Problem(f"Row 2 has {keys:,} keys; at most 500.", row=2, line=2)


def test_a_json_array_element_over_the_key_limit_is_a_row_problem():
    data = "[" + jsonl_row(600) + "]"
    (out,) = parsed(data, "json")
    assert isinstance(out, Problem) and out.row == 1
    assert out.message == "Row 1 has 600 keys; at most 500."


def test_a_row_of_exactly_500_keys_is_read():
    (row,) = parsed(jsonl_row(500))
    assert len(row.metadata) == 498


def test_a_rows_metadata_object_counts_toward_its_metadata_keys():
    (out,) = parsed(jsonl_row(10, nested=495))
    assert out == Problem(
        "Row 1 has 503 metadata keys; at most 500.", row=1, column="metadata", line=1
    )
    (ok,) = parsed(jsonl_row(10, nested=492))
    assert len(ok.metadata) == 500


@pytest.mark.django_db
def test_api_upload_of_a_200k_key_row_is_refused_and_writes_nothing(
    client, project, owner
):
    data = jsonl_row(2) + jsonl_row(200_000)
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {"file": upload("wide.jsonl", data), "name": "wide"},
        **bearer(owner),
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "row 2", "message": "Row 2 has 200,000 keys; at most 500."}
    ]
    assert Dataset.objects.count() == 0 and Item.objects.count() == 0


@pytest.mark.django_db
def test_api_upload_of_500_keys_is_accepted(client, project, owner):
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {"file": upload("wide.jsonl", jsonl_row(500)), "name": "wide"},
        **bearer(owner),
    )
    assert response.status_code == 201, response.content
    assert len(Item.objects.get().metadata) == 498


@pytest.mark.django_db
def test_web_upload_of_a_200k_key_row_is_refused_with_its_row(
    client, project, owner, settings, tmp_path
):
    settings.VAR_DIR = tmp_path
    login(client, owner)
    response = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": upload("wide.jsonl", jsonl_row(200_000)), "name": ""},
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "row 1: Row 1 has 200,000 keys; at most 500." in body
    assert not any((tmp_path / "uploads").glob("*.upload"))
    assert Dataset.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "data", "field", "message"),
    [
        (
            "items.jsonl",
            json.dumps(
                {
                    "id": "i1",
                    "input": "q",
                    "expectedOutput": "a",
                    "metadata": {f"m{i}": i for i in range(600)},
                    "datasetName": "d",
                }
            ),
            "row 1, column metadata",
            "Row 1 has 60",  # 600 of its own and the Langfuse fields
        ),
        (
            "examples.jsonl",
            json.dumps(
                {
                    "inputs": {"question": "q"},
                    "outputs": {"answer": "a"},
                    "metadata": {f"m{i}": i for i in range(600)},
                }
            ),
            "row 1, column metadata",
            "Row 1 has 60",
        ),
    ],
    ids=["langfuse", "langsmith"],
)
def test_imports_refuse_metadata_over_the_limit_and_write_nothing(
    client, project, owner, name, data, field, message
):
    response = client.post(
        f"/api/projects/{project.pk}/imports",
        {"file": upload(name, data + "\n")},
        **bearer(owner),
    )
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert error["field"] == field
    assert error["message"].startswith(message)
    assert error["message"].endswith("metadata keys; at most 500.")
    assert Dataset.objects.count() == 0


@pytest.mark.django_db
def test_promptfoo_import_refuses_a_result_with_more_vars_than_the_limit(
    client, project, owner
):
    doc = promptfoo_doc()
    doc["results"]["results"][0]["vars"] = {f"v{i}": "x" for i in range(600)}
    response = client.post(
        f"/api/projects/{project.pk}/imports",
        {"file": upload("results.json", json.dumps(doc))},
        **bearer(owner),
    )
    assert response.status_code == 400, response.content
    messages = [e["message"] for e in response.json()["errors"]]
    assert "Row 1 has 600 vars; at most 500." in messages
    assert Dataset.objects.count() == 0


@pytest.mark.django_db
def test_dataset_page_with_500_metadata_keys_shows_a_bounded_part(
    client, project, owner
):
    rows = "".join(jsonl_row(500) for _ in range(25))
    dataset = dataset_create(
        project=project, user=owner, file=upload("wide.jsonl", rows), name="wide"
    )
    login(client, owner)
    page = client.get(reverse("datasets:detail", args=[project.pk, dataset.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    # 20 of each item's 498 keys, and 50 of the dataset's 498 metadata columns.
    assert body.count("and 478 more") == 25
    assert "and 448 more" in body
    assert "<strong>k19</strong>" in body and "<strong>k20</strong>" not in body
    assert len(body) < 200_000


@pytest.mark.django_db
def test_mapping_page_of_a_500_column_file_shows_a_bounded_preview(
    client, project, owner, settings, tmp_path
):
    settings.VAR_DIR = tmp_path
    login(client, owner)
    response = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": upload("wide.jsonl", jsonl_row(500) * 3), "name": ""},
    )
    assert response.status_code == 302
    page = client.get(response.url)
    body = page.content.decode()
    assert page.status_code == 200
    head = body[body.index('<table id="preview-table">') : body.index("</thead>")]
    assert head.count("<th>") == 50
    assert "and 450 more columns" in head
