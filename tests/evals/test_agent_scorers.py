"""Scorer kinds on agent data (issue 18 part 2): offered now that items hold tool calls,
run over an uploaded dataset, and their list options edited as lists."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from evalsite.datasets.services import dataset_create
from evalsite.evals import services
from evalsite.evals.forms import ScorerForm
from evalsite.evals.models import Result, Run, ScorerConfig
from evalsite.evals.services import scorer_create
from tests.datasets.conftest import upload

pytestmark = pytest.mark.django_db

ROWS = [
    {  # the expected tools, in order
        "input": "Book a flight to Oslo",
        "output": "Booked flight SK4411.",
        "context": ["Flights to Oslo leave daily."],
        "tool_calls": [
            {
                "name": "search_flights",
                "arguments": {"to": "OSL"},
                "result": ["SK4411"],
            },
            {"name": "book", "arguments": {"flight": "SK4411"}, "result": "ok"},
        ],
        "expected_tool_calls": ["search_flights", "book"],
    },
    {  # booked without searching
        "input": "Book a flight to Rome",
        "output": "Booked.",
        "context": ["Flights to Rome leave daily."],
        "tool_calls": [{"name": "book", "arguments": {"flight": "AZ1"}}],
        "expected_tool_calls": ["search_flights", "book"],
    },
    {  # no tool calls at all in the file
        "input": "Hello",
        "output": "Hi! How can I help?",
        "context": ["Greet the user."],
    },
]


def _dataset(project, owner):
    data = "".join(json.dumps(r) + "\n" for r in ROWS)
    return dataset_create(
        project=project, user=owner, file=upload("agent.jsonl", data), name="agent"
    )


def test_a_run_scores_uploaded_tool_calls_beside_an_offline_judge_kind(
    project, owner, judge, django_capture_on_commit_callbacks
):
    dataset = _dataset(project, owner)
    scorers = [
        scorer_create(
            project=project, user=owner, name="Tools", kind="tool_call_accuracy"
        ),
        scorer_create(
            project=project, user=owner, name="Trajectory", kind="trajectory_accuracy"
        ),
        scorer_create(
            project=project, user=owner, name="Faith", kind="faithfulness", judge=judge
        ),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    run.refresh_from_db()
    # Finished; the item without tool calls is the one error.
    assert run.status == Run.Status.DONE_WITH_ERRORS
    by = {
        (r.run_scorer.kind, r.item.index): r
        for r in Result.objects.filter(run=run).select_related("run_scorer", "item")
    }
    assert by["tool_call_accuracy", 0].status == Result.Status.OK
    assert by["tool_call_accuracy", 0].judge_score == 1
    assert by["tool_call_accuracy", 0].analysis["actual_tools"] == [
        "search_flights",
        "book",
    ]
    assert by["tool_call_accuracy", 1].judge_score == 0
    assert by["trajectory_accuracy", 0].judge_score == 1
    assert by["trajectory_accuracy", 1].judge_score == 0.5
    # An item without tool calls fails its own result with the reason, nothing else.
    missing = by["tool_call_accuracy", 2]
    assert missing.status == Result.Status.ERROR
    assert "no tool_calls" in missing.error
    assert all(by["faithfulness", i].status == Result.Status.OK for i in range(3))


def test_expected_tool_order_option_wins_over_the_items(
    project, owner, django_capture_on_commit_callbacks
):
    dataset = _dataset(project, owner)
    scorer = scorer_create(
        project=project,
        user=owner,
        name="Only book",
        kind="tool_call_accuracy",
        options={"expected_tool_order": ["book"]},
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[scorer]
        )
    scores = dict(
        Result.objects.filter(run=run, status=Result.Status.OK).values_list(
            "item__index", "judge_score"
        )
    )
    assert scores == {0: 1, 1: 1}


# ------------------------------------------------------------------ list options


def test_list_option_is_shown_one_per_line_not_as_a_python_list(project):
    form = ScorerForm(
        project_id=project.pk,
        kind="tool_call_accuracy",
        current_options={"expected_tool_order": ["search_flights", "book"]},
    )
    html = str(form["options.expected_tool_order"])
    assert "<textarea" in html
    assert "search_flights\nbook</textarea>" in html
    assert "[&#x27;" not in html and "['" not in html


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("search_flights\nbook", ["search_flights", "book"]),
        ("search_flights\r\n\r\n  book  \n", ["search_flights", "book"]),
        ("search_flights, book", ["search_flights", "book"]),  # "comma-separated"
        ('["search_flights", "book"]', ["search_flights", "book"]),
        ("", None),
    ],
)
def test_list_option_round_trips_from_the_form(project, text, expected):
    form = ScorerForm(
        {
            "name": "T",
            "kind": "tool_call_accuracy",
            "options.expected_tool_order": text,
            "options.scale": "1",
            "options.threshold": "0.5",
        },
        project_id=project.pk,
        kind="tool_call_accuracy",
    )
    assert form.is_valid(), form.errors
    assert form.options()["expected_tool_order"] == expected


def test_list_option_that_is_broken_json_is_a_field_error(project):
    form = ScorerForm(
        {
            "name": "T",
            "kind": "tool_call_accuracy",
            "options.expected_tool_order": '["search", ',
            "options.scale": "1",
        },
        project_id=project.pk,
        kind="tool_call_accuracy",
    )
    assert not form.is_valid()
    assert "Not a valid JSON array" in form.errors["options.expected_tool_order"][0]


def test_scorer_edit_page_round_trips_a_list_option(owner_client, project, owner):
    scorer = scorer_create(
        project=project,
        user=owner,
        name="Tools",
        kind="tool_call_accuracy",
        options={"expected_tool_order": ["search_flights", "book"]},
    )
    url = reverse("evals:scorer_edit", args=[project.pk, scorer.pk])
    body = owner_client.get(url).content.decode()
    shown = re.search(
        r'<textarea name="options.expected_tool_order"[^>]*>(.*?)</textarea>',
        body,
        re.S,
    )
    assert shown is not None
    text = shown.group(1).strip("\n")
    assert text == "search_flights\nbook"
    response = owner_client.post(
        url,
        {
            "name": "Tools",
            "kind": "tool_call_accuracy",
            "options.scale": "1",
            "options.threshold": "0.5",
            "options.expected_tool": "",
            "options.expected_tool_order": text,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    scorer.refresh_from_db()
    saved = ScorerConfig.objects.filter(pk=scorer.pk).first() or scorer
    assert saved.options["expected_tool_order"] == ["search_flights", "book"]


def test_new_scorer_form_offers_the_agent_kinds(owner_client, project):
    body = owner_client.get(
        reverse("evals:scorer_create", args=[project.pk]) + "?kind=trajectory_accuracy"
    ).content.decode()
    assert 'value="tool_call_accuracy"' in body
    assert 'name="options.expected_tool_order"' in body
    assert 'name="options.ordering"' in body
