"""Every scorer kind the app offers runs on an uploaded item that has every field a
dataset can hold (agent data included), through the offline judge: the agent kinds
work from upload to run, not only in the scoring library."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalsite.datasets.services import dataset_create
from evalsite.evals.models import Result
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from evalsite.evals.scorers.services import ITEM_FIELDS, SCORER_KINDS
from scoring import KINDS
from tests.conftest import login
from tests.datasets.conftest import upload

pytestmark = pytest.mark.django_db

ITEM = {
    "input": "Book the cheapest flight to Oslo on Friday and tell me the price.",
    "output": "I booked flight SK4411 to Oslo on Friday; it costs 89 EUR.",
    "context": [
        "SK4411 flies to Oslo on Fridays and costs 89 EUR.",
        "DY1302 flies to Oslo on Fridays and costs 120 EUR.",
    ],
    "reference": "Flight SK4411 on Friday, 89 EUR, is booked.",
    "system_prompt": "You are a travel agent. Search before you book. Always give the price.",
    "conversation": [
        {"role": "user", "content": "Book the cheapest flight to Oslo on Friday."},
        {"role": "assistant", "content": "Searching for flights to Oslo on Friday."},
        {
            "role": "tool",
            "content": "SK4411 89 EUR; DY1302 120 EUR",
            "tool_call_id": "1",
        },
        {"role": "user", "content": "And tell me the price."},
        {
            "role": "assistant",
            "content": "I booked flight SK4411 to Oslo on Friday; it costs 89 EUR.",
        },
    ],
    "tool_calls": [
        {
            "id": "1",
            "name": "search_flights",
            "arguments": {"to": "OSL", "day": "friday"},
            "result": [{"flight": "SK4411", "price": 89}],
        },
        {"name": "book", "arguments": {"flight": "SK4411"}, "result": "booked"},
    ],
    "expected_tool_calls": ["search_flights", "book"],
    "expected_trajectory": [
        {"name": "search_flights", "arguments": {"to": "OSL", "day": "friday"}},
        {"name": "book"},
    ],
    "baseline_output": "Flight SK4411 to Oslo on Friday is booked for 89 EUR.",
}


def test_every_kind_whose_fields_an_item_holds_is_offered():
    # Kinds that are not runnable (`imported`: another tool's grade) are never offered.
    offered = [
        k
        for k in KINDS
        if KINDS[k].runnable and set(KINDS[k].required_fields) <= ITEM_FIELDS
    ]
    assert offered == list(SCORER_KINDS)
    assert "imported" in KINDS and "imported" not in SCORER_KINDS
    # Each agent field of the upload is a case key some kind may read.
    assert set(ITEM) - {"context"} <= ITEM_FIELDS


@pytest.mark.parametrize("kind", SCORER_KINDS)
def test_each_offered_kind_scores_an_uploaded_agent_item(
    kind, client, project, owner, judge, django_capture_on_commit_callbacks
):
    dataset = dataset_create(
        project=project,
        user=owner,
        file=upload("agent.jsonl", json.dumps(ITEM) + "\n"),
        name="agent",
    )
    scorer = scorer_services.scorer_create(
        project=project,
        user=owner,
        name=kind,
        kind=kind,
        judge=judge if KINDS[kind].needs_judge else None,
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[scorer]
        )
    result = Result.objects.get(run=run)
    assert result.status == Result.Status.OK, result.error
    assert result.judge_score is not None
    # Reviewed on the item page, and exported.
    login(client, owner)
    page = client.get(reverse("review:item", args=[project.pk, result.pk]))
    assert page.status_code == 200
    assert 'id="agent-tool-calls"' in page.content.decode()
    export = client.get(reverse("exports:run_jsonl", args=[project.pk, run.pk]))
    [record] = [
        json.loads(line)
        for line in b"".join(export.streaming_content).decode().splitlines()
    ]
    assert record["scorer_kind"] == kind
    assert record["tool_calls"] == ITEM["tool_calls"]
