"""Agent data end to end through the web app: upload a JSONL of an
agent's conversations and tool calls, run tool_call_accuracy on it, review an item
(its turns and its tool-call table), export the run and the dataset with the columns,
and upload the export again."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import Result, Run
from evalsite.evals.scorers.services import scorer_create
from tests.conftest import bearer, login
from tests.datasets.conftest import AGENT_ROW as ROW
from tests.datasets.conftest import upload

pytestmark = pytest.mark.django_db


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def test_upload_run_review_export_and_upload_again(
    client, project, owner, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.VAR_DIR = tmp_path
    login(client, owner)
    # 1. Upload through the two steps; the agent columns are mapped by their names.
    data = (
        json.dumps(ROW)
        + "\n"
        + json.dumps({**ROW, "tool_calls": [ROW["tool_calls"][1]]})
        + "\n"
    )
    response = client.post(
        reverse("datasets:upload", args=[project.pk]),
        {"file": upload("agent.jsonl", data), "name": "flights"},
    )
    map_url = response["Location"]
    page = client.get(map_url).content.decode()
    assert '<option value="tool_calls" selected>' in page
    assert (
        "agent-mapping" in page and " open" in page.split('id="agent-mapping"')[1][:10]
    )
    form = {
        "name": "flights",
        "input": "input",
        "output": "output",
        "context_format": "json",
        "context_delimiter": "\\n",
        **{
            name: name
            for name in (
                "system_prompt",
                "conversation",
                "tool_calls",
                "expected_tool_calls",
                "baseline_output",
            )
        },
    }
    response = client.post(map_url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    dataset = Dataset.objects.get(name="flights")
    assert dataset.agent_fields == [
        "system_prompt",
        "conversation",
        "tool_calls",
        "expected_tool_calls",
        "baseline_output",
    ]

    # 2. Run tool_call_accuracy from the run form.
    scorer = scorer_create(
        project=project, user=owner, name="Tools", kind="tool_call_accuracy"
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("evals:run_create", args=[project.pk]),
            {"dataset": dataset.pk, "scorers": [scorer.pk]},
        )
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.status == Run.Status.DONE
    scores = dict(
        Result.objects.filter(run=run).values_list("item__index", "judge_score")
    )
    assert scores == {0: 1.0, 1: 0.0}

    # 3. The item page shows the turns and the tool-call table, escaped.
    result = Result.objects.get(run=run, item__index=0)
    page = client.get(
        reverse("review:item", args=[project.pk, result.pk])
    ).content.decode()
    agent = page.split('<section id="agent-data">')[1].split("</section>")[0]
    assert "Never book without searching first." in agent
    assert agent.count('class="turn turn-') == 4
    assert 'class="badge turn-role">tool</span>' in agent
    assert "Searching &lt;b&gt;flights&lt;/b&gt;" in agent
    table = agent.split('id="agent-tool-calls"')[1].split("</table>")[0]
    assert table.count('<tr class="tool-call') == 2
    assert '<code class="tool-name">search_flights</code>' in table
    # Arguments as a tree of keys and values, not JSON text.
    assert '<dt>to</dt><dd><span class="json-str">OSL</span></dd>' in table
    assert "&lt;script&gt;x&lt;/script&gt;" in table and "<script>x" not in page
    assert 'id="agent-expected-tool-calls"' in agent
    assert "Booked flight SK4411 (89 EUR)." in agent
    # The page of every scorer of the item shows the same, once.
    every = client.get(
        reverse("review:run_item", args=[project.pk, run.pk, result.item_id])
    ).content.decode()
    assert every.count('<section id="agent-data">') == 1
    assert '<code class="tool-name">search_flights</code>' in every
    # The result in the review API carries its item's agent data too.
    api_item = client.get(f"/api/results/{result.pk}", **bearer(owner)).json()["item"]
    assert api_item["system_prompt"].endswith("Never book without searching first.")
    assert [c["name"] for c in api_item["tool_calls"]] == [
        c["name"] for c in result.item.tool_calls
    ]
    assert api_item["conversation"] == result.item.conversation

    # 4. The run export has the agent columns after reference, as JSON.
    rows = list(
        csv.DictReader(
            io.StringIO(
                _body(client.get(reverse("exports:run_csv", args=[project.pk, run.pk])))
            )
        )
    )
    header = list(rows[0])
    assert header[header.index("reference") + 1 : header.index("reference") + 6] == [
        "system_prompt",
        "conversation",
        "tool_calls",
        "expected_tool_calls",
        "baseline_output",
    ]
    first = next(r for r in rows if r["item_index"] == "0")
    assert json.loads(first["tool_calls"]) == ROW["tool_calls"]
    assert first["system_prompt"] == ROW["system_prompt"]
    records = [
        json.loads(line)
        for line in _body(
            client.get(reverse("exports:run_jsonl", args=[project.pk, run.pk]))
        ).splitlines()
    ]
    assert records[0]["conversation"][0]["role"] == "user"
    assert records[0]["expected_tool_calls"] == ["search_flights", "book"]
    import pyarrow.parquet as pq

    table = pq.read_table(
        io.BytesIO(
            b"".join(
                client.get(
                    reverse("exports:run_parquet", args=[project.pk, run.pk])
                ).streaming_content
            )
        )
    )
    assert "tool_calls" in table.column_names
    by_index = dict(
        zip(
            table.column("item_index").to_pylist(),
            table.column("tool_calls").to_pylist(),
            strict=True,
        )
    )
    assert json.loads(by_index[0]) == ROW["tool_calls"]

    # 5. The dataset export uploads again with the default mapping, unchanged.
    exported = _body(
        client.get(reverse("exports:dataset_csv", args=[project.pk, dataset.pk]))
    )
    assert exported.splitlines()[0].startswith(
        "item_id,index,input,output,context,reference,system_prompt,conversation,"
        "tool_calls,expected_tool_calls,baseline_output"
    )
    response = client.post(
        f"/api/projects/{project.pk}/datasets",
        {"file": upload("again.csv", exported), "name": "again"},
        HTTP_AUTHORIZATION=_bearer_header(owner),
    )
    assert response.status_code == 201, response.content
    again = Item.objects.get(dataset__name="again", index=0)
    original = Item.objects.get(dataset=dataset, index=0)
    for name in dataset.agent_fields:
        assert getattr(again, name) == getattr(original, name), name


def test_a_dataset_without_agent_data_exports_the_columns_it_always_had(
    client, project, owner
):
    from evalsite.datasets.services import dataset_create

    dataset = dataset_create(
        project=project,
        user=owner,
        file=upload("d.csv", "input,output\nq,a\n"),
        name="d",
    )
    login(client, owner)
    header = _body(
        client.get(reverse("exports:dataset_csv", args=[project.pk, dataset.pk]))
    ).splitlines()[0]
    assert header == "item_id,index,input,output,context,reference"


def _bearer_header(user) -> str:
    from tests.conftest import bearer

    return bearer(user)["HTTP_AUTHORIZATION"]
