from __future__ import annotations

import json
import re

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


def _recounted(run):
    """The run's figures counted over its result rows: results by status, and the
    errors grouped by scorer and message, most frequent first (then scorer, message)."""
    by_status: dict[str, int] = {}
    groups: dict[tuple[int, str], int] = {}
    for r in Result.objects.filter(run=run).select_related("run_scorer"):
        by_status[r.status] = by_status.get(r.status, 0) + 1
        if r.status == Result.Status.ERROR:
            key = (r.run_scorer_id, r.error)
            groups[key] = groups.get(key, 0) + 1
    errors = [
        {"run_scorer_id": rs, "message": message, "count": n}
        for (rs, message), n in sorted(groups.items(), key=lambda g: (-g[1], g[0]))
    ]
    return by_status, errors


def scorers_of(run):
    return list(run.run_scorers.order_by("pk"))


def _list_row(client, project, run):
    body = client.get(_url("runs", project)).content.decode()
    return body.split(f">{run}<")[1].split("</tr>")[0]


def _api_figures(client, run, headers):
    body = client.get(f"/api/runs/{run.pk}", **headers).json()
    progress = body["progress"]
    errors = [
        {k: g[k] for k in ("run_scorer_id", "message", "count")}
        for g in body["errors_by_message"]
    ]
    return progress, errors


def test_finished_run_figures_equal_a_recount_before_and_after_the_cache(
    owner_client, project, owner, dataset, scorers, bearer
):
    """A finished run's progress, errors by message and result count are read from
    the judge side its aggregates cache once the run page has been shown: the same
    figures as counted over the rows before that, and new ones after a retry."""
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    ids = list(Result.objects.filter(run=run).values_list("pk", flat=True))
    Result.objects.filter(run=run).update(
        status=Result.Status.OK, judge_score=0.8, final_score=0.8
    )
    # One error each: the order falls to the scorer, then to the message.
    first, second = (
        list(Result.objects.filter(run_scorer=rs).order_by("pk"))
        for rs in scorers_of(run)
    )
    for result, message in (
        (first[0], "b: timed out"),
        (first[1], "a: refused"),
        (second[0], "a: refused"),
    ):
        Result.objects.filter(pk=result.pk).update(
            status=Result.Status.ERROR, error=message
        )
    run_services.run_finish_if_complete(run_id=run.pk)
    run.refresh_from_db()
    headers = bearer(owner)
    by_status, errors = _recounted(run)
    assert [(g["run_scorer_id"], g["message"]) for g in errors] == [
        (first[0].run_scorer_id, "a: refused"),
        (first[0].run_scorer_id, "b: timed out"),
        (second[0].run_scorer_id, "a: refused"),
    ]

    cold = _api_figures(owner_client, run, headers)  # nothing cached yet
    listed = _list_row(owner_client, project, run)
    page = owner_client.get(_url("run_detail", project, run.pk)).content.decode()
    warm = _api_figures(owner_client, run, headers)  # the page cached the judge sides
    assert cold == warm
    assert _list_row(owner_client, project, run) == listed
    assert f"{len(ids)} / {len(ids)}" in listed
    assert f'badge error">{by_status[Result.Status.ERROR]}<' in listed
    progress, api_errors = warm
    assert api_errors == errors
    assert (progress["ok"], progress["errors"], progress["pending"]) == (
        by_status.get(Result.Status.OK, 0),
        by_status.get(Result.Status.ERROR, 0),
        0,
    )
    table = page.split('id="run-errors"')[1].split("</table>")[0]
    rows = re.findall(r"<code>([^<]*)</code>.*?badge error\">(\d+)<", table)
    assert rows == [(g["message"], str(g["count"])) for g in errors]
    assert f"Create queue from these {len(ids)} results" in page
    again = owner_client.get(_url("run_detail", project, run.pk)).content.decode()
    assert again.split('id="run-errors"')[1].split("</table>")[0] == table

    # A retry runs the failed results again: the figures follow the new finish.
    run_services.run_retry_failed(run=run, user=owner)
    Result.objects.filter(run=run, status=Result.Status.PENDING).update(
        status=Result.Status.OK, judge_score=0.4, final_score=0.4
    )
    run_services.run_finish_if_complete(run_id=run.pk)
    progress, api_errors = _api_figures(owner_client, run, headers)
    assert api_errors == []
    assert (progress["ok"], progress["errors"]) == (len(ids), 0)
    page = owner_client.get(_url("run_detail", project, run.pk)).content.decode()
    assert (
        "No errors." in page and f"Create queue from these {len(ids)} results" in page
    )
