"""The mapping step's guesses: the context column by name and by content, and a new
version of a dataset starting from the previous version's mapping."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from evalsite.datasets.models import Dataset
from evalsite.datasets.parsing.mapping import mapping_carry_over, suggest_mapping
from tests.conftest import login
from tests.datasets.conftest import upload
from tests.factories import ProjectFactory


def _csv_cell(value: object) -> str:
    return '"' + json.dumps(value).replace('"', '""') + '"'


@pytest.mark.parametrize(
    "name",
    [
        "context_chunks",
        "Chunks",
        "passages",
        "retrieved",
        "documents",
        "top_k_passages",
    ],
)
def test_a_context_column_is_guessed_by_its_name(name):
    mapping = suggest_mapping(["input", "output", name, "topic"], [])
    assert mapping["context"] == name
    assert mapping["input"] == "input" and mapping["output"] == "output"


def test_a_column_of_json_string_lists_is_guessed_as_the_context():
    rows = [
        {"q": "a", "a": "b", "evidence": '["one", "two"]', "topic": "x"},
        {"q": "c", "a": "d", "evidence": '["three"]', "topic": "y"},
    ]
    mapping = suggest_mapping(["q", "a", "evidence", "topic"], rows)
    assert mapping["context"] == "evidence"
    assert mapping["context_format"] == "json"


def test_parsed_lists_count_too_and_a_list_of_objects_does_not():
    rows = [{"evidence": ["one"], "calls": [{"name": "x"}], "n": [1, 2]}]
    assert suggest_mapping(["calls", "n", "evidence"], rows)["context"] == "evidence"
    assert suggest_mapping(["calls", "n"], rows)["context"] is None


def test_a_cell_cut_by_the_preview_still_counts_as_a_list():
    long_list = json.dumps(["x" * 3000])[:2000]  # what the preview keeps
    mapping = suggest_mapping(["evidence"], [{"evidence": long_list}])
    assert mapping["context"] == "evidence"


def test_content_guess_needs_every_cell_to_be_a_list_and_skips_agent_fields():
    rows = [{"notes": '["a"]', "expected_trajectory": '["search"]'}, {"notes": "b"}]
    mapping = suggest_mapping(["notes", "expected_trajectory"], rows)
    assert mapping["context"] is None
    assert mapping["expected_trajectory"] == "expected_trajectory"


def test_carry_over_keeps_choices_whose_columns_remain_and_the_users_none():
    previous = {
        "input": "q",
        "output": "a",
        "context": "ctx",
        "reference": None,
        "context_format": "delimited",
        "context_delimiter": "||",
    }
    columns = ["q", "a", "ctx", "gold", "expected_output"]
    suggested = suggest_mapping(columns, [])
    assert suggested["reference"] == "expected_output"
    carried = mapping_carry_over(
        previous, ["q", "a", "ctx", "expected_output"], columns, suggested
    )
    assert (carried["input"], carried["output"], carried["context"]) == (
        "q",
        "a",
        "ctx",
    )
    # The previous file had expected_output and the user left reference unmapped.
    assert carried["reference"] is None
    assert (carried["context_format"], carried["context_delimiter"]) == (
        "delimited",
        "||",
    )


def test_carry_over_falls_back_to_the_guess_for_a_column_that_is_gone():
    previous = {"input": "old_q", "output": "a", "context": "ctx"}
    columns = ["question", "a", "passages"]
    carried = mapping_carry_over(
        previous, ["old_q", "a", "ctx"], columns, suggest_mapping(columns, [])
    )
    assert carried["input"] == "question"
    assert carried["output"] == "a"
    assert carried["context"] == "passages"
    assert carried["context_format"] == "json"


# The mapping step itself.


@pytest.fixture(autouse=True)
def _uploads_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path


def _selected(body: str, field: str) -> str:
    select = re.search(rf'<select name="{field}".*?</select>', body, re.S)
    assert select is not None
    chosen = re.search(r'<option value="([^"]*)" selected>', select.group())
    return chosen.group(1) if chosen else ""


def _start(client, project, data: str, name: str = "") -> str:
    response = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": upload("rag.csv", data), "name": name},
    )
    assert response.status_code == 302
    return response.url


@pytest.mark.django_db
def test_the_mapping_step_selects_a_context_chunks_column(client, project, owner):
    login(client, owner)
    data = (
        "question,answer,context_chunks\n"
        f"q1,a1,{_csv_cell(['chunk one', 'chunk two'])}\n"
    )
    url = _start(client, project, data)
    body = client.get(url).content.decode()
    assert _selected(body, "context") == "context_chunks"
    assert 'id="mapping-carried"' not in body  # a first version has nothing to follow
    response = client.post(
        url,
        {
            "name": "rag",
            "input": "question",
            "output": "answer",
            "context": "context_chunks",
            "context_format": "json",
        },
    )
    assert response.status_code == 302
    item = Dataset.objects.get().items.get()
    assert item.context == ["chunk one", "chunk two"]


@pytest.mark.django_db
def test_a_new_version_starts_from_the_previous_versions_mapping(
    client, project, owner
):
    login(client, owner)
    first = "prompt,reply,kb,notes\np,r,k1 || k2,n\n"
    url = _start(client, project, first, name="support")
    client.post(
        url,
        {
            "name": "support",
            "input": "prompt",
            "output": "reply",
            "context": "kb",
            "reference": "notes",
            "context_format": "delimited",
            "context_delimiter": "||",
        },
    )
    v1 = Dataset.objects.get()
    assert v1.mapping["context"] == "kb" and v1.mapping["reference"] == "notes"

    # The next file has the same columns but "notes" is gone and "answer" is new.
    second = "prompt,reply,kb,answer\np2,r2,k3 || k4,x\n"
    url = _start(client, project, second, name="support")
    body = client.get(url).content.decode()
    assert _selected(body, "input") == "prompt"
    assert _selected(body, "output") == "reply"
    assert _selected(body, "context") == "kb"
    assert _selected(body, "reference") == ""  # its column is gone
    assert 'value="delimited" checked' in body or re.search(
        r'value="delimited"[^>]*checked', body
    )
    assert 'value="||"' in body
    assert "version 2 of “support”" in body

    # Another name is another dataset: the guess alone.
    url = _start(client, project, second, name="other")
    body = client.get(url).content.decode()
    assert _selected(body, "input") == "prompt"
    assert _selected(body, "output") == "answer"  # a synonym, not v1's "reply"
    assert _selected(body, "context") == ""
    assert 'id="mapping-carried"' not in body


@pytest.mark.django_db
def test_another_projects_dataset_of_the_same_name_is_not_followed(
    client, project, owner
):
    login(client, owner)
    other_project = ProjectFactory()
    Dataset.objects.create(
        project=other_project,
        name="support",
        file_format="csv",
        mapping={"input": "prompt", "output": "reply"},
        columns=["prompt", "reply"],
    )
    url = _start(client, project, "prompt,reply,answer\np,r,a\n", name="support")
    body = client.get(url).content.decode()
    assert _selected(body, "output") == "answer"
    assert 'id="mapping-carried"' not in body


@pytest.mark.django_db
def test_an_api_upload_without_a_mapping_follows_the_previous_version(
    client, project, owner
):
    from tests.conftest import bearer

    headers = bearer(owner)
    url = f"/api/projects/{project.pk}/datasets"
    first = client.post(
        url,
        {
            "name": "support",
            "file": upload("v1.csv", "prompt,reply,kb\np,r,k\n"),
            "mapping": json.dumps({"input": "prompt", "output": "reply"}),
        },
        **headers,
    )
    assert first.status_code == 201, first.content
    # "answer" would be guessed as the output; v1's choice, "reply", wins.
    second = client.post(
        url,
        {"name": "support", "file": upload("v2.csv", "prompt,reply,answer\np,r,a\n")},
        **headers,
    )
    assert second.status_code == 201, second.content
    mapping = second.json()["mapping"]
    assert (mapping["input"], mapping["output"]) == ("prompt", "reply")
    assert Dataset.objects.get(version=2).items.get().metadata == {"answer": "a"}
