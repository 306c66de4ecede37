"""Agent data on items (issue 18 part 2): a system prompt, a conversation, tool calls,
expected tool calls / trajectory and a baseline output, mapped on upload like context,
checked row by row, stored, and served by the API."""

from __future__ import annotations

import io
import json

import pytest
from django.urls import reverse

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.models import Item
from evalsite.datasets.parsing.limits import Problem
from evalsite.datasets.parsing.mapping import Mapping, ParsedRow
from evalsite.datasets.parsing.rows import parse_rows
from evalsite.datasets.services import DatasetUploadError, dataset_create
from tests.conftest import bearer, login
from tests.datasets.conftest import upload

CONVERSATION = [
    {"role": "system", "content": "You book flights."},
    {"role": "user", "content": "A flight to Oslo on Friday, please."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
    {"role": "tool", "content": "2 flights", "tool_call_id": "c1"},
    {"role": "assistant", "content": "Two flights leave on Friday."},
]
TOOL_CALLS = [
    {"name": "search_flights", "arguments": {"to": "OSL", "day": "fri"}, "result": 2},
    {"name": "summarise", "arguments": {}, "result": "Two flights leave on Friday."},
]
EXPECTED = ["search_flights", {"name": "summarise"}]
AGENT_ROW = {
    "input": "A flight to Oslo on Friday?",
    "output": "Two flights leave on Friday.",
    "system_prompt": "You book flights.",
    "conversation": CONVERSATION,
    "tool_calls": TOOL_CALLS,
    "expected_tool_calls": EXPECTED,
    "expected_trajectory": ["search_flights", "summarise"],
    "baseline_output": "There are two Friday flights.",
    "topic": "travel",
}
ALL_AGENT = Mapping(
    input="input",
    output="output",
    system_prompt="system_prompt",
    conversation="conversation",
    tool_calls="tool_calls",
    expected_tool_calls="expected_tool_calls",
    expected_trajectory="expected_trajectory",
    baseline_output="baseline_output",
)


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def csv_of(rows: list[dict]) -> bytes:
    import csv

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                for k, v in row.items()
            }
        )
    return out.getvalue().encode()


def parse(data: bytes, fmt: str, mapping: Mapping = ALL_AGENT) -> list:
    return list(parse_rows(io.BytesIO(data), file_format=fmt, mapping=mapping))


EXPECTED_ROW = ParsedRow(
    index=0,
    input=AGENT_ROW["input"],
    output=AGENT_ROW["output"],
    context=[],
    reference="",
    metadata={"topic": "travel"},
    system_prompt="You book flights.",
    # A null content (a turn that only calls tools) is read as "".
    conversation=[{**m, "content": m["content"] or ""} for m in CONVERSATION],
    tool_calls=TOOL_CALLS,
    expected_tool_calls=EXPECTED,
    expected_trajectory=["search_flights", "summarise"],
    baseline_output="There are two Friday flights.",
)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "json"])
def test_every_agent_column_is_mapped_in_each_format(fmt):
    if fmt == "jsonl":
        data = jsonl(AGENT_ROW)
    elif fmt == "json":
        data = json.dumps([AGENT_ROW]).encode()
    else:
        data = csv_of([AGENT_ROW])
    [row] = parse(data, fmt)
    assert row == EXPECTED_ROW


@pytest.mark.parametrize(
    "field",
    ["conversation", "tool_calls", "expected_tool_calls", "expected_trajectory"],
)
def test_a_jsonl_field_may_also_hold_its_json_as_text(field):
    [row] = parse(jsonl({**AGENT_ROW, field: json.dumps(AGENT_ROW[field])}), "jsonl")
    assert getattr(row, field) == getattr(EXPECTED_ROW, field)


def test_empty_agent_cells_are_none_but_an_empty_list_is_kept():
    """No expected tool calls given (None) is not "expected to call no tool" ([])."""
    data = b"input,output,tool_calls,expected_tool_calls,system_prompt\nq,a,,[],\n"
    [row] = parse(data, "csv", ALL_AGENT_SUBSET)
    assert row.tool_calls is None
    assert row.expected_tool_calls == []
    assert row.system_prompt == ""


ALL_AGENT_SUBSET = Mapping(
    input="input",
    output="output",
    tool_calls="tool_calls",
    expected_tool_calls="expected_tool_calls",
    system_prompt="system_prompt",
)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tool_calls", "[{name: 1}]", "Tool calls is not valid JSON"),
        (
            "tool_calls",
            '{"name": "x"}',
            "Tool calls is a JSON object; expected a JSON list",
        ),
        ("tool_calls", '[{"name": ""}]', 'Tool call 1 needs a "name"'),
        ("tool_calls", '[{"name": "a"}, "b"]', "Tool call 2 is a JSON string"),
        (
            "tool_calls",
            '[{"name": "a", "args": {}}]',
            "Tool call 1 has the key 'args', which is not one of name, arguments",
        ),
        ("tool_calls", '[{"name": "' + "n" * 201 + '"}]', "at most 200"),
        ("conversation", '[{"content": "hi"}]', 'Message 1 needs a "role"'),
        ("conversation", '[{"role": "user", "content": ["x"]}]', "must be text"),
        ("conversation", '[{"role": "user", "text": "x"}]', "key 'text'"),
        ("conversation", '"hello"', "Conversation is a JSON string"),
        ("expected_tool_calls", "[3]", "Step 1 is a JSON number"),
        ("expected_trajectory", '[{"arguments": {}}]', 'Step 1 needs a "name"'),
        ("system_prompt", '{"a": 1}', None),  # CSV text: a prompt may look like JSON
    ],
)
def test_wrong_shapes_are_problems_naming_row_column_and_why(field, value, message):
    data = csv_of(
        [
            {
                "input": "q",
                "output": "a",
                field: "[]" if field != "system_prompt" else "",
            },
            {"input": "q", "output": "a", field: value},
        ]
    )
    out = parse(data, "csv", Mapping(input="input", output="output", **{field: field}))
    if message is None:
        assert [getattr(r, field) for r in out] == ["", value]
        return
    assert isinstance(out[0], ParsedRow)
    [problem] = out[1:]
    assert isinstance(problem, Problem)
    assert (problem.row, problem.column) == (2, field)
    assert message in problem.message


def test_a_jsonl_system_prompt_must_be_text():
    [problem] = parse(jsonl({**AGENT_ROW, "system_prompt": ["a"]}), "jsonl")
    assert isinstance(problem, Problem)
    assert problem.column == "system_prompt"
    assert problem.message == "System prompt is a JSON array; it must be text."


def test_deep_nesting_in_a_cell_is_refused_before_it_is_decoded():
    deep = "[" * 5000 + "]" * 5000
    data = csv_of([{"input": "q", "output": "a", "tool_calls": deep}])
    [problem] = parse(
        data, "csv", Mapping(input="input", output="output", tool_calls="tool_calls")
    )
    assert isinstance(problem, Problem)
    assert problem.column == "tool_calls"
    assert "nested more than" in problem.message


def test_deep_arguments_in_a_jsonl_row_are_refused():
    deep: object = "x"
    for _ in range(40):
        deep = {"a": deep}
    [problem] = parse(
        jsonl({**AGENT_ROW, "tool_calls": [{"name": "t", "arguments": deep}]}), "jsonl"
    )
    assert isinstance(problem, Problem)
    assert problem.column == "tool_calls" and "nested more than" in problem.message


def test_too_many_entries_are_refused():
    calls = [{"name": "t"}] * 1001
    [problem] = parse(jsonl({**AGENT_ROW, "tool_calls": calls}), "jsonl")
    assert isinstance(problem, Problem)
    assert "1,001 entries; at most 1,000" in problem.message


def test_a_nul_escaped_inside_a_csv_json_cell_is_refused():
    data = csv_of(
        [{"input": "q", "output": "a", "tool_calls": '[{"name": "a\\u0000b"}]'}]
    )
    [problem] = parse(
        data, "csv", Mapping(input="input", output="output", tool_calls="tool_calls")
    )
    assert isinstance(problem, Problem) and "cannot be stored" in problem.message


def test_a_mapped_agent_column_missing_from_the_file_is_named():
    with pytest.raises(Exception, match="tool_calls"):
        parse(
            b"input,output\nq,a\n",
            "csv",
            Mapping(input="input", output="output", tool_calls="tool_calls"),
        )


def test_unknown_mapping_keys_still_refused_and_agent_keys_accepted():
    mapping = Mapping.from_dict(
        {"input": "q", "output": "a", "tool_calls": "calls", "conversation": ""}
    )
    assert (mapping.tool_calls, mapping.conversation) == ("calls", None)
    assert mapping.as_dict()["tool_calls"] == "calls"
    with pytest.raises(Exception, match="Unknown mapping key 'toolcalls'"):
        Mapping.from_dict({"input": "q", "output": "a", "toolcalls": "calls"})


# ------------------------------------------------------------------ with the database


@pytest.mark.django_db
def test_upload_stores_agent_fields_and_the_case_carries_them(project, owner):
    dataset = dataset_create(
        project=project,
        user=owner,
        file=upload("agent.jsonl", jsonl(AGENT_ROW, {"input": "q2", "output": "a2"})),
        name="agent",
    )
    assert dataset.mapping["tool_calls"] == "tool_calls"  # the default mapping
    first, second = Item.objects.filter(dataset=dataset).order_by("index")
    assert first.tool_calls == TOOL_CALLS
    assert first.conversation[2]["content"] == ""
    assert first.metadata == {"topic": "travel"}
    case = first.as_case()
    assert case["tool_calls"] == TOOL_CALLS
    assert case["expected_tool_calls"] == EXPECTED
    assert case["system_prompt"] == "You book flights."
    assert case["baseline_output"] == "There are two Friday flights."
    assert case["expected_trajectory"] == ["search_flights", "summarise"]
    assert case["conversation"][0] == {"role": "system", "content": "You book flights."}
    # A row without agent data: NULL in the database, absent from the case.
    assert second.tool_calls is None and second.conversation is None
    # SQL NULL (what Django stores for None), not the JSON text "null".
    assert Item.objects.filter(dataset=dataset, tool_calls__isnull=True).count() == 1
    assert not {"tool_calls", "conversation", "system_prompt"} & set(second.as_case())


@pytest.mark.django_db
def test_a_bad_agent_row_imports_nothing_and_says_where(project, owner):
    bad = {**AGENT_ROW, "tool_calls": [{"tool": "x"}]}
    with pytest.raises(DatasetUploadError) as info:
        dataset_create(
            project=project,
            user=owner,
            file=upload("agent.jsonl", jsonl(AGENT_ROW, bad)),
            name="agent",
        )
    assert "row 2, column tool_calls" in info.value.field_errors
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_api_upload_with_an_agent_mapping_and_items_round_trip(client, project, owner):
    row = {
        "q": "Book Oslo",
        "a": "Booked.",
        "calls": json.dumps(TOOL_CALLS),
        "turns": json.dumps(CONVERSATION[:2]),
        "want": json.dumps(EXPECTED),
    }
    mapping = {
        "input": "q",
        "output": "a",
        "tool_calls": "calls",
        "conversation": "turns",
        "expected_tool_calls": "want",
    }
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {
            "file": upload("a.csv", csv_of([row])),
            "name": "agent",
            "mapping": json.dumps(mapping),
        },
        **bearer(owner),
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["mapping"]["tool_calls"] == "calls"
    items = client.get(f"/api/datasets/{body['id']}/items", **bearer(owner)).json()
    [item] = items["items"]
    assert item["tool_calls"] == TOOL_CALLS
    assert item["conversation"] == CONVERSATION[:2]
    assert item["expected_tool_calls"] == EXPECTED
    assert item["expected_trajectory"] is None
    assert item["system_prompt"] == "" and item["baseline_output"] == ""
    assert item["metadata"] == {}


@pytest.mark.django_db
def test_api_bad_agent_json_is_400_with_row_and_column(client, project, owner):
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {
            "file": upload("a.csv", b"input,output,tool_calls\nq,a,[oops\n"),
            "name": "agent",
        },
        **bearer(owner),
    )
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["field"] == "row 1, column tool_calls"
    assert error["message"].startswith("Tool calls is not valid JSON")


@pytest.mark.django_db
def test_api_mapping_with_a_non_text_agent_column_is_400(client, project, owner):
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {
            "file": upload("a.csv", b"input,output\nq,a\n"),
            "name": "agent",
            "mapping": json.dumps(
                {"input": "input", "output": "output", "tool_calls": 3}
            ),
        },
        **bearer(owner),
    )
    assert response.status_code == 400
    assert "tool_calls mapping must be a column name" in response.content.decode()


@pytest.mark.django_db
def test_mapping_page_maps_agent_columns(client, project, owner, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    login(client, owner)
    data = csv_of([{"question": "q", "answer": "a", "calls": json.dumps(TOOL_CALLS)}])
    response = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": upload("agent.csv", data), "name": ""},
    )
    assert response.status_code == 302
    map_url = response["Location"]
    page = client.get(map_url).content.decode()
    assert 'id="agent-mapping"' in page and 'name="tool_calls"' in page
    form = {
        "name": "agent",
        "input": "question",
        "output": "answer",
        "context_format": "json",
        "context_delimiter": "\\n",
        "tool_calls": "calls",
    }
    response = client.post(map_url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    item = Item.objects.get(dataset__name="agent")
    assert item.tool_calls == TOOL_CALLS
    assert item.metadata == {}


@pytest.mark.django_db
def test_mapping_page_shows_agent_problems(client, project, owner, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    login(client, owner)
    data = b'question,answer,calls\nq,a,"[{""nam"": 1}]"\n'
    response = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": upload("agent.csv", data), "name": ""},
    )
    map_url = response["Location"]
    response = client.post(
        map_url,
        {
            "name": "agent",
            "input": "question",
            "output": "answer",
            "context_format": "json",
            "tool_calls": "calls",
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "row 1, column calls" in body
    assert "the key &#x27;nam&#x27;" in body
    assert not Item.objects.exists()


def test_application_error_is_the_base_of_upload_errors():
    # The API maps ApplicationError to 400 once: agent problems ride on it.
    assert issubclass(DatasetUploadError, ApplicationError)


@pytest.mark.django_db
def test_dataset_page_sums_up_each_items_agent_data(client, project, owner):
    dataset = dataset_create(
        project=project,
        user=owner,
        file=upload("agent.jsonl", jsonl(AGENT_ROW, {"input": "q", "output": "a"})),
        name="agent",
    )
    plain = dataset_create(
        project=project,
        user=owner,
        file=upload("d.csv", b"input,output\nq,a\n"),
        name="d",
    )
    login(client, owner)
    body = client.get(
        reverse("datasets:detail", args=[project.pk, dataset.pk])
    ).content.decode()
    assert "<th>tool_calls</th><td>tool_calls</td>" in body  # the mapping
    assert "<th>Agent</th>" in body
    assert "5 turns" in body
    assert "2 tool calls: <code>search_flights</code>, <code>summarise</code>" in body
    plain_body = client.get(
        reverse("datasets:detail", args=[project.pk, plain.pk])
    ).content.decode()
    assert "<th>Agent</th>" not in plain_body


def test_only_the_fields_own_names_are_mapped_by_default():
    """Other tools' agent columns (DeepEval's tools_called: calls of another shape)
    stay metadata unless the user maps them."""
    from evalsite.datasets.parsing.mapping import suggest_mapping

    mapping = suggest_mapping(
        ["input", "output", "tools_called", "messages", "tool_calls", "system_prompt"]
    )
    assert mapping["tool_calls"] == "tool_calls"
    assert mapping["system_prompt"] == "system_prompt"
    assert mapping["conversation"] is None
    assert mapping["expected_tool_calls"] is None


def test_item_page_view_cuts_long_values_and_long_lists():
    from types import SimpleNamespace

    from evalsite.datasets.templatetags.agent_data import (
        MAX_JSON_CHARS,
        MAX_ROWS,
        MAX_TEXT_CHARS,
        agent_view,
    )

    long_text = "x" * (MAX_TEXT_CHARS + 500)
    item = SimpleNamespace(
        system_prompt=long_text,
        baseline_output="",
        conversation=[{"role": "user", "content": long_text}] * 1000,
        tool_calls=[{"name": "t", "arguments": {"q": "y" * 5000}, "result": None}],
        expected_tool_calls=["t"],
        expected_trajectory=None,
    )
    view = agent_view(item)
    assert view.system_prompt.endswith("… (500 more characters)")
    assert len(view.turns) == MAX_ROWS and view.turns_hidden == 1000 - MAX_ROWS
    assert view.turns[0].content.endswith("… (500 more characters)")
    [call] = view.tool_calls
    assert len(call.arguments) < MAX_JSON_CHARS + 40
    assert call.arguments.startswith('{\n  "q": "yyy')
    assert call.result == "null"  # a null result is shown, an absent one is not
    assert view.expected_tool_calls[0].name == "t"
    assert view.expected_tool_calls[0].arguments is None
    assert not view.has_expected_trajectory and view.has_any
