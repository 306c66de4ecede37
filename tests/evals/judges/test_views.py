"""Judge connection pages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evalsite.evals.models import Result, Run
from evalsite.evals.runs import services as run_services

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def login(client, user):
    client.force_login(user)
    return client


SECRET = "sk-live-DO-NOT-LEAK-4242"


def _url(name, project, *args):
    return reverse(f"evals:{name}", args=[project.pk, *args])


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


def test_only_the_edit_form_offers_to_keep_the_current_key(owner_client, project):
    new = owner_client.get(_url("judges", project)).content.decode()
    assert "keep" not in new.split("New judge connection", 1)[1].lower()
    assert "Stored encrypted and never shown again" in new
    owner_client.post(
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
    judge = project.judges.get(name="GPT")
    edit = owner_client.get(_url("judge_edit", project, judge.pk)).content.decode()
    assert "A key is set. Leave empty to keep it" in edit


def test_judge_prices_say_their_currency(owner_client, project):
    body = owner_client.get(_url("judges", project)).content.decode()
    assert "Price per 1k input tokens (USD)" in body
    assert "Price per 1k output tokens (USD)" in body
