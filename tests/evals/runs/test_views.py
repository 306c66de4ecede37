from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evalsite.evals.models import Result, Run, ScorerConfig
from evalsite.evals.runs import services as run_services

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def login(client, user):
    client.force_login(user)
    return client


SECRET = "sk-live-DO-NOT-LEAK-4242"


def _url(name, project, *args):
    return reverse(f"evals:{name}", args=[project.pk, *args])


# --------------------------------------------------------------------------- judges


def test_judge_list_shows_the_offline_judge_labelled(client, project, viewer, judge):
    body = login(client, viewer).get(_url("judges", project)).content.decode()
    assert "offline heuristic judge" in body
    assert "Only project owners manage judge connections." in body


def test_judge_list_is_404_for_outsiders(client, project, outsider, judge):
    assert login(client, outsider).get(_url("judges", project)).status_code == 404


def test_judge_list_refuses_post(owner_client, project):
    assert owner_client.post(_url("judges", project)).status_code == 405


def test_owner_creates_a_judge_and_the_key_is_never_rendered(owner_client, project):
    response = owner_client.post(
        _url("judge_create", project),
        {
            "name": "GPT",
            "base_url": "https://api.example.com/v1",
            "model": "gpt-4o-mini",
            "api_key": SECRET,
            "temperature": 0,
            "timeout_seconds": 30,
            "max_concurrency": 4,
            "requests_per_minute": 100,
        },
    )
    assert response.status_code == 302
    judge = project.judges.get(name="GPT")
    for url in (_url("judges", project), _url("judge_edit", project, judge.pk)):
        body = owner_client.get(url).content.decode()
        assert SECRET not in body
        assert judge.api_key_encrypted not in body
    assert (
        "A key is set"
        in owner_client.get(_url("judge_edit", project, judge.pk)).content.decode()
    )


def test_judge_create_shows_errors_next_to_the_field(owner_client, project):
    response = owner_client.post(
        _url("judge_create", project),
        {
            "name": "Bad",
            "base_url": "ftp://nope",
            "model": "m",
            "temperature": 0,
            "timeout_seconds": 30,
            "max_concurrency": 4,
            "requests_per_minute": 100,
        },
    )
    assert response.status_code == 400
    assert "Enter an http(s) URL" in response.content.decode()


def test_reviewer_cannot_manage_judges(client, project, reviewer, judge):
    client = login(client, reviewer)
    assert client.post(_url("judge_create", project), {"name": "x"}).status_code == 403
    assert client.get(_url("judge_edit", project, judge.pk)).status_code == 403


def test_judge_edit_is_404_from_another_project(client, outsider, judge):
    other = outsider.memberships.get().project
    response = login(client, outsider).get(_url("judge_edit", other, judge.pk))
    assert response.status_code == 404


def test_judge_test_htmx_returns_only_the_result_fragment(owner_client, project, judge):
    response = owner_client.post(_url("judge_test", project, judge.pk), **HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.startswith(f'<span id="judge-test-{judge.pk}"')
    assert "OK" in body and "<html" not in body


# --------------------------------------------------------------------------- scorers


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


# --------------------------------------------------------------------------- runs


def test_run_new_preview_fragment_shows_prompts_and_estimate(
    owner_client, project, dataset, scorers
):
    query = f"?dataset={dataset.pk}&scorers={scorers[0].pk}&scorers={scorers[1].pk}"
    response = owner_client.get(_url("run_create", project) + query, **HX)
    body = response.content.decode()
    assert body.strip().startswith('<section id="run-preview">')
    assert "Refunds are processed within 5 business days." in body
    assert 'id="estimated-calls">9<' in body
    assert "offline heuristic judge" in body


def test_run_start_via_the_form_runs_to_done(
    owner_client, project, dataset, scorers, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(
            _url("run_create", project),
            {"dataset": dataset.pk, "scorers": [s.pk for s in scorers]},
        )
    run = Run.objects.get()
    assert response.status_code == 302
    assert response["Location"] == _url("run_detail", project, run.pk)
    body = owner_client.get(response["Location"]).content.decode()
    assert "100 %" in body and "Done" in body


def test_viewer_cannot_start_a_run(client, project, viewer, dataset, scorers):
    response = login(client, viewer).post(
        _url("run_create", project), {"dataset": dataset.pk, "scorers": [scorers[0].pk]}
    )
    assert response.status_code == 403
    assert not Run.objects.exists()


def test_run_pages_are_404_for_outsiders(
    client, project, owner, outsider, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    client = login(client, outsider)
    assert client.get(_url("run_detail", project, run.pk)).status_code == 404
    assert client.get(_url("runs", project)).status_code == 404
    other = outsider.memberships.get().project
    assert client.get(_url("run_detail", other, run.pk)).status_code == 404


def test_run_progress_polls_while_running(
    owner_client, project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    response = owner_client.get(_url("run_progress", project, run.pk), **HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.strip().startswith('<section id="run-progress"')
    assert 'hx-trigger="every 1s"' in body and "<html" not in body


def test_run_progress_stops_polling_when_finished_and_refreshes_the_summary(
    owner_client, project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    Result.objects.filter(run=run).update(
        status=Result.Status.OK, judge_score=1, final_score=1
    )
    run_services.run_finish_if_complete(run_id=run.pk)
    response = owner_client.get(_url("run_progress", project, run.pk), **HX)
    assert response.status_code == 286
    assert "run-finished" in json.loads(response["HX-Trigger"])
    assert "every 1s" not in response.content.decode()


def test_run_detail_lists_errors_grouped_by_message(
    owner_client, project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    Result.objects.filter(run=run).update(
        status=Result.Status.ERROR, error="judge said no"
    )
    run_services.run_finish_if_complete(run_id=run.pk)
    body = owner_client.get(_url("run_detail", project, run.pk)).content.decode()
    errors = body.split('id="run-errors"')[1].split("</table>")[0]
    assert "judge said no" in errors
    assert errors.count("judge said no") == 2  # one group per scorer
    assert "Done with errors" in body


def test_run_summary_fragment(owner_client, project, owner, dataset, scorers):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    body = owner_client.get(_url("run_summary", project, run.pk), **HX).content.decode()
    assert body.strip().startswith('<section id="run-summary"') and "<html" not in body


def test_run_cancel_via_htmx_returns_the_progress_fragment(
    client, project, owner, reviewer, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    response = login(client, reviewer).post(_url("run_cancel", project, run.pk), **HX)
    assert response.status_code == 200
    assert 'data-status="cancelled"' in response.content.decode()
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED


def test_run_cancel_refuses_get_and_viewers(
    client, project, owner, viewer, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    client = login(client, viewer)
    assert client.get(_url("run_cancel", project, run.pk)).status_code == 405
    assert client.post(_url("run_cancel", project, run.pk)).status_code == 403


def test_run_list_shows_runs_with_progress(
    client, project, owner, viewer, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    body = login(client, viewer).get(_url("runs", project)).content.decode()
    assert str(run) in body and "0 / 6" in body


def test_run_list_query_count_does_not_grow_with_runs(
    owner_client, project, owner, dataset, scorers, django_assert_max_num_queries
):
    for _ in range(5):
        run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
        )
    with django_assert_max_num_queries(12):
        response = owner_client.get(_url("runs", project))
    assert response.content.decode().count("0 / 6") == 5


def test_run_progress_tells_calls_in_flight_rates_eta_and_judge_errors_while_running(
    owner_client, project, owner, dataset, scorers, settings, tmp_path, time_machine
):
    from evalsite.evals.engine import livestats

    settings.VAR_DIR = tmp_path
    settings.REDIS_URL = ""  # the file store; the Redis one is read the same way
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    started = run.created_at
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started_at=started)
    # Two dispatchers report; one result finished 5 s into the run.
    time_machine.move_to(started + timedelta(seconds=5), tick=False)
    first = run.results.order_by("pk").first()
    Result.objects.filter(pk=first.pk).update(
        status=Result.Status.OK, updated_at=timezone.now()
    )
    time_machine.move_to(started + timedelta(seconds=10), tick=False)
    livestats.publish(
        run_id=run.pk,
        token="host:1:a",
        snapshot=livestats.Snapshot(
            in_flight=40, calls=300, calls_per_second=61.5, throttled=2, server_errors=1
        ),
    )
    livestats.publish(
        run_id=run.pk,
        token="host:2:b",
        snapshot=livestats.Snapshot(
            in_flight=24, calls=100, calls_per_second=20.0, throttled=1, server_errors=0
        ),
    )
    body = owner_client.get(
        _url("run_progress", project, run.pk), **HX
    ).content.decode()
    assert "<strong>64.0</strong> calls in flight" in body
    assert "81.5 calls/s" in body
    assert "3 × 429" in body and "1 × 5xx" in body
    # 1 result in the last 10 s: 0.1 results/s, and the ETA follows that rate.
    pending = run.results.filter(status=Result.Status.PENDING).count()
    assert "0.1 results/s" in body
    assert f"ETA {pending * 10} s" in body

    # A dispatcher not heard from lately (killed) keeps its counts, not its calls.
    time_machine.move_to(started + timedelta(seconds=10 + livestats.FRESH_SECONDS + 1))
    livestats.publish(
        run_id=run.pk,
        token="host:2:b",
        snapshot=livestats.Snapshot(
            in_flight=5, calls=120, calls_per_second=10.0, throttled=1, server_errors=0
        ),
    )
    body = owner_client.get(
        _url("run_progress", project, run.pk), **HX
    ).content.decode()
    assert "<strong>5.0</strong> calls in flight" in body
    assert "10.0 calls/s" in body and "3 × 429" in body

    api = owner_client.get(f"/api/runs/{run.pk}").json()
    assert api["progress"]["in_flight"] == 5
    assert api["progress"]["throttled"] == 3
