"""Scorer kinds on agent data: offered now that items hold tool calls,
run over an uploaded dataset, and their list options edited as lists."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from evalsite.datasets.services import dataset_create
from evalsite.evals.models import Result, Run, ScorerConfig
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from evalsite.evals.scorers.forms import ScorerForm
from evalsite.evals.scorers.services import scorer_create
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
        run = run_services.run_start(
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
        run = run_services.run_start(
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


def _submitted(form: ScorerForm) -> dict[str, str]:
    """What a browser submits for the form as shown: every field's shown value."""
    data: dict[str, str] = {}
    for name in ["name", "kind", "judge", *form.option_names]:
        bound = form[name]
        value = bound.value()
        if bound.widget_type == "checkbox":
            if value:
                data[name] = "on"
            continue
        if name == "judge":
            value = getattr(value, "pk", value)
        data[name] = "" if value is None else str(value)
    return data


@pytest.mark.parametrize("kind", scorer_services.SCORER_KINDS)
def test_every_kinds_options_round_trip_through_the_create_and_edit_forms(
    kind, owner_client, project, judge
):
    """The form as shown, submitted unchanged, saves the kind's defaults; the edit
    form shows them again and saving it changes nothing (list options included)."""
    from scoring import KINDS, validate_options

    form = ScorerForm(
        project_id=project.pk,
        kind=kind,
        initial={"name": kind, "judge": judge if KINDS[kind].needs_judge else None},
    )
    data = _submitted(form)
    create = reverse("evals:scorer_create", args=[project.pk])
    response = owner_client.post(create, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    scorer = ScorerConfig.objects.get(name=kind)
    assert scorer.options == validate_options(kind, {})

    edit = ScorerForm(
        project_id=project.pk,
        kind=kind,
        current_options=scorer.options,
        initial={"name": kind, "judge": scorer.judge},
    )
    response = owner_client.post(
        reverse("evals:scorer_edit", args=[project.pk, scorer.pk]), _submitted(edit)
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    latest = ScorerConfig.objects.filter(name=kind).order_by("-pk").first()
    assert latest is not None and latest.options == scorer.options


def test_list_of_objects_option_reads_json_or_the_options_own_lines(project, judge):
    for text in (
        "Gives the price\nIs polite",
        '[{"description": "Gives the price"}, {"description": "Is polite"}]',
    ):
        form = ScorerForm(
            {
                "name": "R",
                "kind": "rubric",
                "judge": judge.pk,
                "options.scale": "1",
                "options.threshold": "0.5",
                "options.criteria": text,
            },
            project_id=project.pk,
            kind="rubric",
        )
        assert form.is_valid(), form.errors
        scorer = scorer_create(
            project=project,
            user=None,
            name="R",
            kind="rubric",
            judge=judge,
            options=form.options(),
        )
        assert [c["description"] for c in scorer.options["criteria"]] == [
            "Gives the price",
            "Is polite",
        ]
    shown = ScorerForm(
        project_id=project.pk, kind="rubric", current_options=scorer.options
    )["options.criteria"].value()
    assert json.loads(shown)[0]["description"] == "Gives the price"
    sequences = ScorerForm(
        project_id=project.pk,
        kind="trajectory",
        current_options={"blacklisted_sequences": [["delete", "confirm"], ["a", "b"]]},
    )["options.blacklisted_sequences"].value()
    assert sequences == "delete, confirm\na, b"


def test_a_nullable_yes_no_option_keeps_not_set_apart_from_no(project):
    """trajectory's no_redundant_calls: None (not checked) is not False; a checkbox
    saved every unset one as false."""
    form = ScorerForm(
        project_id=project.pk,
        kind="trajectory",
        current_options={"no_redundant_calls": True},
    )
    html = str(form["options.no_redundant_calls"])
    assert '<option value="true" selected>Yes</option>' in html
    for shown, saved in (("unknown", None), ("true", True), ("false", False)):
        bound = ScorerForm(
            {
                "name": "T",
                "kind": "trajectory",
                "options.no_redundant_calls": shown,
                "options.scale": "1",
            },
            project_id=project.pk,
            kind="trajectory",
        )
        assert bound.is_valid(), bound.errors
        options = bound.options()
        assert options.get("no_redundant_calls", None) is saved


def test_run_form_refuses_a_scorer_whose_fields_no_item_has(
    owner_client, project, owner, judge
):
    """tool_call_accuracy on a dataset without tool calls, factuality without a
    reference: every result would error, so the run is refused with the reason."""
    plain = dataset_create(
        project=project,
        user=owner,
        file=upload("d.csv", "input,output\nq,a\nq2,a2\n"),
        name="plain",
    )
    agent = _dataset(project, owner)
    tools = scorer_create(
        project=project, user=owner, name="Tools", kind="tool_call_accuracy"
    )
    fact = scorer_create(
        project=project, user=owner, name="Fact", kind="factuality", judge=judge
    )
    url = reverse("evals:run_create", args=[project.pk])
    response = owner_client.post(
        url, {"dataset": plain.pk, "scorers": [tools.pk, fact.pk]}
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert (
        "“Tools” (Tool call accuracy) needs tool_calls, which no item of plain v1 has."
        in body
    )
    assert "“Fact” (Factuality) needs reference" in body
    assert not Run.objects.exists()
    # Some items with tool calls are enough (the others error one by one).
    response = owner_client.post(url, {"dataset": agent.pk, "scorers": [tools.pk]})
    assert response.status_code == 302
    from evalsite.evals.scorers.services import scorer_fields_missing

    assert scorer_fields_missing(
        dataset=agent, kinds=["tool_call_accuracy", "noise_sensitivity"]
    ) == {"noise_sensitivity": ["baseline_output"]}
