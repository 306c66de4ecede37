"""Scorer pages."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evalsite.evals.models import ScorerConfig
from evalsite.evals.runs import services as run_services

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def login(client, user):
    client.force_login(user)
    return client


def _url(name, project, *args):
    return reverse(f"evals:{name}", args=[project.pk, *args])


def test_scorer_form_has_the_kind_option_fields_with_defaults(
    owner_client, project, judge
):
    body = owner_client.get(
        _url("scorer_create", project) + "?kind=context_relevance"
    ).content.decode()
    assert 'name="options.penalties.unused_high_relevance"' in body
    assert re.search(
        r'name="options.penalties.max_missing_context_penalty"[^>]*value="0.5"', body
    )
    assert "<html" in body


def test_scorer_form_kind_change_swaps_only_the_option_fields(
    owner_client, project, judge
):
    response = owner_client.get(
        _url("scorer_create", project) + "?kind=custom_rubric", **HX
    )
    body = response.content.decode()
    assert body.strip().startswith('<div id="scorer-kind-fields">')
    assert "<html" not in body
    assert 'name="options.rubric_prompt"' in body
    assert "{{output}}" in body  # the allowed placeholders are listed


def test_scorer_form_shows_an_option_error_inline(owner_client, project, judge):
    response = owner_client.post(
        _url("scorer_create", project),
        {
            "name": "CR",
            "kind": "context_relevance",
            "judge": judge.pk,
            "options.scale": "1",
            "options.threshold": "0.5",
            "options.penalties.unused_high_relevance": "2",
            "options.penalties.missing_context_per_item": "0.15",
            "options.penalties.max_missing_context_penalty": "0.5",
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    block = body.split('data-option="options.penalties.unused_high_relevance"')[
        1
    ].split('data-option="options.penalties.missing_context_per_item"')[0]
    assert 'class="error"' in block and "penalties.unused_high_relevance" in block
    assert not ScorerConfig.objects.filter(name="CR").exists()


def test_scorer_form_creates_with_the_submitted_options(owner_client, project, judge):
    response = owner_client.post(
        _url("scorer_create", project),
        {
            "name": "Fact",
            "kind": "factuality",
            "judge": judge.pk,
            "options.scale": "10",
            "options.threshold": "",
            "options.category_scores.subset": "0.4",
            "options.category_scores.superset": "1",
            "options.category_scores.agree": "1",
            "options.category_scores.disagree": "0",
            "options.category_scores.differ_but_factual": "1",
            "options.rubric_prompt": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    scorer = ScorerConfig.objects.get(name="Fact")
    assert scorer.options["scale"] == 10
    assert scorer.options["threshold"] is None
    assert scorer.options["category_scores"]["subset"] == 0.4
    assert scorer.options["rubric_prompt"] is None


def test_scorer_form_rejects_a_rubric_without_its_placeholder(
    owner_client, project, judge
):
    response = owner_client.post(
        _url("scorer_create", project),
        {
            "name": "R",
            "kind": "custom_rubric",
            "judge": judge.pk,
            "options.scale": "1",
            "options.threshold": "0.5",
            "options.rubric_prompt": "Is it polite?",
        },
    )
    assert response.status_code == 400
    assert "{{output}}" in response.content.decode()


def test_viewer_cannot_create_scorers(client, project, viewer, judge):
    assert login(client, viewer).get(_url("scorer_create", project)).status_code == 403


def test_scorer_edit_after_a_run_makes_a_new_version(
    owner_client, project, owner, dataset, scorers
):
    run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    scorer = scorers[1]
    response = owner_client.post(
        _url("scorer_edit", project, scorer.pk),
        {
            "name": scorer.name,
            "kind": scorer.kind,
            "options.scale": "1",
            "options.threshold": "0.8",
            "options.ignore_case": "on",
        },
    )
    assert response.status_code == 302
    assert ScorerConfig.objects.get(parent=scorer).options["threshold"] == 0.8


def _name_input(body):
    return re.search(r'<input[^>]*name="name"[^>]*>', body).group(0)


def test_new_scorer_name_defaults_to_the_kind_and_follows_it(
    owner_client, project, judge
):
    from scoring import KINDS

    body = owner_client.get(_url("scorer_create", project)).content.decode()
    name = _name_input(body)
    label = KINDS["faithfulness"].label
    assert f'value="{label}"' in name and f'data-default-name="{label}"' in name
    # The kind select says what each kind's default name is (evalsite.js swaps it in).
    assert 'data-name-follows="id_name"' in body
    assert f'data-label="{KINDS["hallucination"].label}"' in body
    # Without JavaScript, "Show options for this kind" re-sends the form: an untouched
    # default name becomes the new kind's, a name typed by hand stays.
    body = owner_client.get(
        _url("scorer_create", project), {"kind": "hallucination", "name": label}
    ).content.decode()
    assert f'value="{KINDS["hallucination"].label}"' in _name_input(body)
    body = owner_client.get(
        _url("scorer_create", project), {"kind": "hallucination", "name": "Mine"}
    ).content.decode()
    assert 'value="Mine"' in _name_input(body)
