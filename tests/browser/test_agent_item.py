"""A real browser opens the item page of an agent's item: the conversation reads as
turns, the tool calls as a table of name, arguments and result, and hostile text in a
tool result stays text."""

from __future__ import annotations

import json

import pytest

from evalsite.datasets.services import dataset_create
from evalsite.evals.models import Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.browser.conftest import login
from tests.datasets.conftest import upload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROW = {
    "input": "What's the weather in Oslo?",
    "output": "It is 4 °C and raining in Oslo.",
    "system_prompt": "You answer weather questions with the weather tool.",
    "conversation": [
        {"role": "user", "content": "What's the weather in Oslo?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "tool", "content": '{"temp": 4, "rain": true}', "tool_call_id": "w1"},
        {"role": "assistant", "content": "It is 4 °C and raining in Oslo."},
    ],
    "tool_calls": [
        {
            "id": "w1",
            "name": "get_weather",
            "arguments": {"city": "Oslo"},
            "result": {"temp": 4, "rain": True},
        },
        {
            "name": "log",
            "arguments": {"note": "<img src=x onerror=window.__xss=1>"},
            "result": "<script>window.__xss=1</script>",
            "success": False,
        },
    ],
    "expected_tool_calls": ["get_weather"],
}


def test_item_page_shows_turns_and_a_tool_call_table(page, live_server, project, owner):
    dataset = dataset_create(
        project=project,
        user=owner,
        file=upload("weather.jsonl", json.dumps(ROW) + "\n"),
        name="weather",
    )
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="Tools", kind="tool_call_accuracy"
    )
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=[scorer]
    )
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    result = Result.objects.get(run=run)

    login(page, live_server, owner.get_username(), "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/results/{result.pk}/")

    turns = page.locator("#agent-conversation .turn")
    assert turns.count() == 4
    assert turns.nth(0).locator(".turn-role").inner_text() == "user"
    assert turns.nth(2).locator(".turn-role").inner_text() == "tool"
    assert "raining in Oslo" in turns.nth(3).inner_text()
    assert turns.nth(0).is_visible()

    rows = page.locator("#agent-tool-calls table.tool-calls tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).locator("td")
    assert first.nth(1).locator(".tool-name").inner_text() == "get_weather"
    # Arguments and results read as a tree of names and values, not raw JSON.
    arguments, result = first.nth(2), first.nth(3)
    assert arguments.locator("dt").all_inner_texts() == ["city"]
    assert arguments.locator("dd").all_inner_texts() == ["Oslo"]
    # (Postgres' jsonb keeps keys in its own order.)
    pairs = zip(
        result.locator("dt").all_inner_texts(),
        result.locator("dd").all_inner_texts(),
        strict=True,
    )
    assert dict(pairs) == {"temp": "4", "rain": "true"}
    # The failed call is marked, and its hostile text is shown, not run.
    second = rows.nth(1)
    assert "failed" in second.inner_text()
    assert "<script>window.__xss=1</script>" in second.locator("td").nth(3).inner_text()
    assert page.evaluate("typeof window.__xss") == "undefined"

    # Sections fold: the tool table hides when its summary is clicked.
    page.click("#agent-tool-calls > summary")
    assert not rows.nth(0).is_visible()
    assert page.locator("#agent-expected-tool-calls .tool-name").inner_text() == (
        "get_weather"
    )
    page.click("#agent-system-prompt > summary")
    assert page.get_by_text("You answer weather questions").is_visible()
