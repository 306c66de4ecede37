from __future__ import annotations

import json
import re

import pytest

from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.services import dataset_create
from tests.conftest import bearer
from tests.datasets.conftest import GOOD_CSV, upload, uploaded_dataset

pytestmark = pytest.mark.django_db


def post_dataset(client, project, user, data=GOOD_CSV, name="support.csv", **fields):
    return client.post(
        f"/api/projects/{project.pk}/datasets",
        {"file": upload(name, data), "name": "support", **fields},
        **bearer(user),
    )


def test_upload_with_default_mapping_returns_201(client, project, reviewer):
    response = post_dataset(client, project, reviewer)
    assert response.status_code == 201, response.content
    body = response.json()
    dataset = Dataset.objects.get()
    assert body["id"] == dataset.pk
    assert (body["name"], body["version"], body["item_count"], body["file_format"]) == (
        "support",
        1,
        2,
        "csv",
    )
    assert body["columns"] == ["input", "output", "context", "reference", "topic"]
    assert body["mapping"]["context"] == "context"
    assert "created_at" in body


def test_upload_with_mapping_json_field(client, project, owner):
    data = '{"q": "Why?", "a": "Because.", "docs": "x\\ny"}\n'
    mapping = {
        "input": "q",
        "output": "a",
        "context": "docs",
        "context_format": "delimited",
        "context_delimiter": "\n",
    }
    response = post_dataset(
        client, project, owner, data=data, name="f.jsonl", mapping=json.dumps(mapping)
    )
    assert response.status_code == 201, response.content
    assert Item.objects.get().context == ["x", "y"]


def test_upload_again_bumps_the_version(client, project, owner):
    post_dataset(client, project, owner)
    assert post_dataset(client, project, owner).json()["version"] == 2


def test_bad_upload_is_400_with_row_and_column_errors_and_imports_nothing(
    client, project, owner
):
    data = 'input,output,context\nq,a,"[""ok""]"\nq,a,"[1]"\nq,a,"{}"\n'
    mapping = json.dumps({"input": "input", "output": "output", "context": "context"})
    response = post_dataset(client, project, owner, data=data, mapping=mapping)
    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith(
        "Nothing was imported: 2 problems, the first at row 2, column context"
    )
    assert body["errors"] == [
        {
            "field": "row 2, column context",
            "message": "Context element 1 is a JSON number, not a string.",
        },
        {
            "field": "row 3, column context",
            "message": "Context is a JSON object, not a list of strings.",
        },
    ]
    assert Dataset.objects.count() == 0 and Item.objects.count() == 0


def test_malformed_jsonl_line_is_400_with_its_line(client, project, owner):
    data = '{"input": "q", "output": "a"}\n{oops}\n'
    response = post_dataset(client, project, owner, data=data, name="x.jsonl")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "row 2"
    assert response.json()["errors"][0]["message"].startswith(
        "Line 2 is not valid JSON"
    )


def test_not_utf8_is_400(client, project, owner):
    response = post_dataset(
        client, project, owner, data="input,output\nq,\xe9\n".encode("latin-1")
    )
    assert response.status_code == 400
    assert "not UTF-8" in response.json()["detail"]
    assert Dataset.objects.count() == 0


def test_upload_over_the_limit_is_413_before_the_body_is_read(
    client, project, owner, settings, monkeypatch
):
    settings.DATASET_MAX_UPLOAD_BYTES = 1000

    def parse(self):
        raise AssertionError("the upload body was read")

    monkeypatch.setattr("django.http.multipartparser.MultiPartParser.parse", parse)
    response = post_dataset(
        client, project, owner, data="input,output\n" + "q,a\n" * 40_000
    )
    assert response.status_code == 413
    body = response.json()
    assert re.match(
        r"The upload is 15\d\.\d KB, over the upload limit of 1000 b", body["detail"]
    )
    assert body["errors"] == [{"field": "file", "message": body["detail"]}]
    assert Dataset.objects.count() == 0


def test_oversized_upload_is_400(client, project, owner, settings):
    settings.DATASET_MAX_UPLOAD_BYTES = 50
    response = post_dataset(client, project, owner)
    assert response.status_code == 400
    assert "over the upload limit" in response.json()["detail"]


def test_mapping_that_is_not_json_is_400_naming_the_field(client, project, owner):
    response = post_dataset(client, project, owner, mapping="{input:")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "mapping", "message": "Expected a JSON object."}
    ]


def test_viewer_upload_is_403_and_outsider_404(client, project, viewer, outsider):
    assert post_dataset(client, project, viewer).status_code == 403
    assert post_dataset(client, project, outsider).status_code == 404
    assert Dataset.objects.count() == 0


def test_upload_without_auth_is_401(client, project):
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {"file": upload("a.csv", GOOD_CSV), "name": "x"},
    )
    assert response.status_code == 401


def test_list_detail_and_items_for_a_viewer(client, project, owner, viewer):
    dataset = uploaded_dataset(project, owner, rows=5)
    headers = bearer(viewer)
    listing = client.get(f"/api/projects/{project.pk}/datasets", **headers).json()
    assert listing["count"] == 1 and listing["items"][0]["id"] == dataset.pk
    detail = client.get(f"/api/datasets/{dataset.pk}", **headers).json()
    assert (detail["item_count"], detail["version"]) == (5, 1)
    items = client.get(
        f"/api/datasets/{dataset.pk}/items?limit=2&offset=2", **headers
    ).json()
    assert items["count"] == 5
    assert [i["index"] for i in items["items"]] == [2, 3]
    assert items["items"][0] == {
        "id": items["items"][0]["id"],
        "index": 2,
        "input": "q2",
        "output": "a2",
        "context": [],
        "reference": "",
        "metadata": {},
        # No agent data: empty text and null lists (null: none given, not []).
        "system_prompt": "",
        "conversation": None,
        "tool_calls": None,
        "expected_tool_calls": None,
        "expected_trajectory": None,
        "baseline_output": "",
    }


def test_outsider_gets_404_on_every_read(client, project, owner, outsider):
    dataset = uploaded_dataset(project, owner)
    headers = bearer(outsider)
    for path in (
        f"/api/projects/{project.pk}/datasets",
        f"/api/datasets/{dataset.pk}",
        f"/api/datasets/{dataset.pk}/items",
        f"/api/datasets/{dataset.pk}/export.csv",
        f"/api/datasets/{dataset.pk}/export.jsonl",
    ):
        assert client.get(path, **headers).status_code == 404, path


def test_export_csv_neutralises_formulas_and_has_no_bom(client, project, owner):
    data = 'input,output,context,topic\n"=HYPERLINK(""http://x"")",+1,"[""@a""]",-x\nplain,ok,[],t\n'
    dataset = dataset_create(
        project=project, user=owner, file=upload("x.csv", data), name="x"
    )
    response = client.get(f"/api/datasets/{dataset.pk}/export.csv", **bearer(owner))
    assert response.status_code == 200
    assert response.streaming
    raw = b"".join(response.streaming_content)
    assert not raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8")
    assert "'=HYPERLINK" in text
    assert ",'+1," in text
    assert "'-x" in text
    assert "plain,ok" in text


def test_export_jsonl_round_trips_items(client, project, owner):
    dataset = uploaded_dataset(project, owner, rows=3)
    response = client.get(f"/api/datasets/{dataset.pk}/export.jsonl", **bearer(owner))
    lines = [
        json.loads(line)
        for line in b"".join(response.streaming_content).decode().splitlines()
    ]
    assert [(r["input"], r["output"]) for r in lines] == [
        ("q0", "a0"),
        ("q1", "a1"),
        ("q2", "a2"),
    ]


HOSTILE = [
    pytest.param(
        "x.jsonl",
        '{"input": "q", "output": "a", "meta": ' + "[" * 1000 + "]" * 1000 + "}\n",
        ("row 1, column meta", "nested more than 32 levels"),
        id="jsonl-depth-1000",
    ),
    pytest.param(
        "x.json",
        '[{"input": "q", "output": "a", "meta": '
        + "[" * 100_000
        + "]" * 100_000
        + "}]",
        ("row 1, column meta", "nested more than 32 levels"),
        id="json-depth-100000",
    ),
    pytest.param(
        "x.csv",
        b"input,output\nq,a\x00b\n",
        ("row 1, column output", "NUL character"),
        id="csv-nul",
    ),
    pytest.param(
        "x.json",
        '[{"input": "q", "output": "\\ud800"}]',
        ("row 1, column output", "unpaired surrogate"),
        id="json-lone-surrogate",
    ),
    pytest.param(
        "x.csv",
        'input,output\nq,a\nq2,"a2\n',
        ("row 2, column output", "never closed"),
        id="csv-unterminated-quote",
    ),
    pytest.param(
        "x.csv",
        "input,output,note\nq,a\n",
        ("row 1", "2 fields but the header has 3"),
        id="csv-short-row",
    ),
]


@pytest.mark.parametrize(("name", "data", "first_error"), HOSTILE)
def test_hostile_file_is_400_with_row_and_column_not_500(
    client, project, owner, name, data, first_error
):
    response = post_dataset(client, project, owner, data=data, name=name)
    assert response.status_code == 400, response.content[:500]
    field, text = first_error
    error = response.json()["errors"][0]
    assert error["field"] == field
    assert text in error["message"]
    assert Dataset.objects.count() == 0 and Item.objects.count() == 0


def test_upload_without_an_output_column_or_mapping_is_400(client, project, owner):
    response = post_dataset(client, project, owner, data="input,text\nq,t\n")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {
            "field": "column output",
            "message": "Choose the column that holds the output.",
        }
    ]
    assert Dataset.objects.count() == 0
