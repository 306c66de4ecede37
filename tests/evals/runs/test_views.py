from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalsite.evals.models import Result, Run
from evalsite.evals.runs import services as run_services

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def login(client, user):
    client.force_login(user)
    return client


def _url(name, project, *args):
    return reverse(f"evals:{name}", args=[project.pk, *args])


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
