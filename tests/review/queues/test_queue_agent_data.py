"""The queue card shows an item's agent data (its system prompt, conversation as turns
and tool calls as a table), as the item page does, so that a tool-call or trajectory
verdict can be judged without leaving the queue; an item without agent data gets a
card without the section."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.datasets.services import dataset_create
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import QueueEntry
from evalsite.review.queues.selectors import queue_entry_at
from evalsite.review.queues.services import queue_create
from evalsite.review.team.services import review_answer
from tests.conftest import login
from tests.datasets.conftest import AGENT_ROW, upload
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

ROW = {
    **AGENT_ROW,
    "tool_calls": [
        AGENT_ROW["tool_calls"][0],
        {
            **AGENT_ROW["tool_calls"][1],
            "arguments": {"flight": "<img src=x onerror=alert(1)>"},
        },
    ],
}
# The second item: the same agent with a much longer conversation and more calls, to
# show the card reads nothing more for more agent data.
LONG_ROW = {
    **ROW,
    "conversation": ROW["conversation"] * 20,
    "tool_calls": ROW["tool_calls"] * 15,
}


@pytest.fixture
def agent_run(project, owner):
    dataset = dataset_create(
        project=project,
        user=owner,
        file=upload(
            "agent.jsonl", json.dumps(ROW) + "\n" + json.dumps(LONG_ROW) + "\n"
        ),
        name="flights",
    )
    return make_run(project, kinds=("tool_call_accuracy",), dataset=dataset)


def _url(queue, pos: int) -> str:
    return reverse("review:queue", args=[queue.project_id, queue.pk]) + f"?pos={pos}"


def _agent_section(page: str) -> str:
    card = page.split('id="queue-card"')[1]
    assert card.count('<section id="agent-data">') == 1
    return card.split('<section id="agent-data">')[1].split("</section>")[0]


def _assert_first_item_agent_data(page: str) -> None:
    agent = _agent_section(page)
    assert "Never book without searching first." in agent
    assert agent.count('class="turn turn-') == 4
    assert 'class="badge turn-role">tool</span>' in agent
    assert "Searching &lt;b&gt;flights&lt;/b&gt;" in agent
    table = agent.split('id="agent-tool-calls"')[1].split("</table>")[0]
    assert table.count('<tr class="tool-call') == 2
    assert '<code class="tool-name">search_flights</code>' in table
    assert '<dt>to</dt><dd><span class="json-str">OSL</span></dd>' in table
    # Hostile text in arguments and results is shown as text, never as markup.
    assert "&lt;script&gt;x&lt;/script&gt;" in table
    assert "&lt;img src=x onerror=alert(1)&gt;" in table
    assert "<script>x" not in page and "<img src=x" not in page
    assert 'id="agent-expected-tool-calls"' in agent


def test_single_review_queue_card_shows_turns_and_tool_calls(
    client, agent_run, reviewer
):
    queue = queue_create(run=agent_run, user=reviewer, query=ResultQuery(sort="item"))
    login(client, reviewer)
    page = client.get(_url(queue, 1)).content.decode()
    _assert_first_item_agent_data(page)
    # The htmx card (next / previous) carries it too.
    card = client.get(_url(queue, 1), HTTP_HX_REQUEST="true").content.decode()
    assert card.lstrip().startswith('<div id="queue-card"')
    _assert_first_item_agent_data(card)
    # ... and so does the card sent back after an answer.
    answered = client.post(
        reverse("review:queue_action", args=[queue.project_id, queue.pk, 1, "pass"]),
        HTTP_HX_REQUEST="true",
    )
    assert answered.status_code == 200
    _assert_first_item_agent_data(answered.content.decode())


def test_blind_card_shows_the_agent_data_but_not_the_verdict(
    client, agent_run, reviewer
):
    # Agent data is the item's, not the judge's: a blind reviewer needs it to answer.
    queue = queue_create(
        run=agent_run, user=reviewer, query=ResultQuery(sort="item"), blind=True
    )
    login(client, reviewer)
    page = client.get(_url(queue, 1)).content.decode()
    assert 'id="blind-notice"' in page and "judge-score" not in page
    _assert_first_item_agent_data(page)


def test_overlap_queue_card_shows_turns_and_tool_calls(client, agent_run, reviewer):
    queue = queue_create(
        run=agent_run, user=reviewer, query=ResultQuery(sort="item"), overlap=2
    )
    login(client, reviewer)
    page = client.get(_url(queue, 1)).content.decode()
    assert 'id="answer-form"' in page
    _assert_first_item_agent_data(page)
    # The card drawn after an answer (reviews.queue_answer, from the entry it read).
    answer_url = reverse("review:queue_answer", args=[queue.project_id, queue.pk, 1])
    response = client.post(answer_url, {"passed": "pass"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    _assert_first_item_agent_data(response.content.decode())


def test_long_agent_data_costs_no_extra_query(client, agent_run, reviewer):
    queue = queue_create(run=agent_run, user=reviewer, query=ResultQuery(sort="item"))
    # The section is drawn from the item the card already holds: no query at all.
    entry = queue_entry_at(queue=queue, position=2)
    assert entry is not None
    with CaptureQueriesContext(connection) as queries:
        html = render_to_string("review/_agent_data.html", {"item": entry.result.item})
    assert len(queries) == 0
    assert html.count('class="turn turn-') == 80
    # The whole card: 4 turns or 80, 2 calls or 30, the same queries.
    login(client, reviewer)
    counts = []
    for pos in (1, 2):
        client.get(_url(queue, pos), HTTP_HX_REQUEST="true")  # warm per-user caches
        with CaptureQueriesContext(connection) as queries:
            card = client.get(_url(queue, pos), HTTP_HX_REQUEST="true")
        assert card.status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]
    calls = card.content.decode().split('id="agent-tool-calls"')[1].split("</table>")[0]
    assert calls.count('<tr class="tool-call') == 30

    # The overlap card after an answer is drawn from the entry the answer read.
    overlap = queue_create(
        run=agent_run, user=reviewer, query=ResultQuery(sort="item"), overlap=2
    )
    answer_counts = []
    for pos in (1, 2):
        url = reverse("review:queue_answer", args=[overlap.project_id, overlap.pk, pos])
        with CaptureQueriesContext(connection) as queries:
            response = client.post(url, {"passed": "fail"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        answer_counts.append(len(queries))
    assert answer_counts[0] == answer_counts[1]
    assert response.content.decode().count('class="turn turn-') == 80


def test_non_agent_dataset_card_has_no_agent_section(client, project, reviewer):
    run = make_run(project, n_items=1, kinds=("faithfulness",))
    single = queue_create(run=run, user=reviewer, query=ResultQuery())
    overlap = queue_create(run=run, user=reviewer, query=ResultQuery(), overlap=2)
    other = QueueEntry.objects.get(queue=overlap, position=1).result
    review_answer(queue=overlap, result=other, user=reviewer, passed=True)
    login(client, reviewer)
    for queue in (single, overlap):
        page = client.get(_url(queue, 1)).content.decode()
        card = page.split('id="queue-card"')[1]
        assert 'class="prompt item-text item-input"' in card  # the card is drawn
        for marker in (
            "agent-data",
            "agent-conversation",
            "agent-tool-calls",
            "agent-system-prompt",
            "<h3>Agent</h3>",
        ):
            assert marker not in card
