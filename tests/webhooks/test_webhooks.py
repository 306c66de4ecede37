"""Webhooks against a real receiver on loopback: signed deliveries that verify with
standardwebhooks, retries after an error, the egress policy, the delivery log and
redeliver, the pages and API (owners only, secrets write-only, ids scoped to the
project), and the events: run finished or failed, queue completed, regression."""

from __future__ import annotations

import base64
import json
import secrets

import pytest
from celery import current_app
from django.test import override_settings
from standardwebhooks import Webhook as Verifier

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.crypto import secret_decrypt
from evalsite.evals.models import Result, Run
from evalsite.evals.runs.services import run_finish_if_complete
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import QueueEntry
from evalsite.review.queues.services import queue_create
from evalsite.review.team.services import review_answer
from evalsite.webhooks import services
from evalsite.webhooks.events import Event
from evalsite.webhooks.models import Delivery, Webhook
from tests.conftest import bearer, login
from tests.factories import (
    DatasetFactory,
    MembershipFactory,
    ProjectFactory,
    QueueEntryFactory,
    ResultFactory,
    ReviewQueueFactory,
    RunFactory,
    UserFactory,
)
from tests.review.builders import case_rows, judged_claims, make_run
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.django_db


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@pytest.fixture(autouse=True)
def _eager_retries():
    """Eager Celery re-runs a task that asks for a retry at once (Task.apply), unless
    errors propagate: then the Retry itself is raised. The tests' settings propagate
    errors, so these tests let retries run as a worker would (without the wait)."""
    conf = current_app.conf
    before = conf.task_eager_propagates
    conf.task_eager_propagates = False
    yield
    conf.task_eager_propagates = before


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def secret():
    return new_secret()


def make_webhook(project, owner, url, secret, events=None, **kwargs) -> Webhook:
    return services.webhook_create(
        project=project,
        user=owner,
        name="ci",
        url=url,
        secret=secret,
        events=events or [Event.RUN_FINISHED, Event.RUN_FAILED],
        **kwargs,
    )


def finish(run_id, capture):
    """Finish a running run through evals' service; the on-commit tasks run (eager)."""
    with capture(execute=True):
        assert run_finish_if_complete(run_id=run_id)


# ------------------------------------------------------------------ delivery


def test_run_finished_is_signed_and_verifies(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    webhook = make_webhook(project, owner, receiver.url, secret)
    run = RunFactory(project=project, status=Run.Status.RUNNING, name="nightly")
    finish(run.pk, django_capture_on_commit_callbacks)

    assert len(receiver.requests) == 1
    request = receiver.requests[0]
    payload = Verifier(secret).verify(request["body"], request["headers"])
    assert payload["type"] == "run.finished"
    assert payload["data"]["run"]["id"] == run.pk
    assert payload["data"]["run"]["status"] == "done"
    # Another secret does not verify it.
    with pytest.raises(Exception, match="signature"):
        Verifier(new_secret()).verify(request["body"], request["headers"])
    delivery = Delivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        Delivery.Status.SUCCEEDED,
        1,
        200,
    )
    assert request["headers"]["webhook-id"] == delivery.message_id


def test_run_with_errors_sends_run_failed_only_to_subscribers(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    make_webhook(project, owner, receiver.url, secret, events=[Event.RUN_FAILED])
    other = Receiver()
    try:
        make_webhook(project, owner, other.url, secret, events=[Event.RUN_FINISHED])
        run = RunFactory(project=project, status=Run.Status.RUNNING)
        ResultFactory(run=run, status=Result.Status.ERROR)
        finish(run.pk, django_capture_on_commit_callbacks)
        assert other.requests == []
    finally:
        other.close()
    body = json.loads(receiver.requests[0]["body"])
    assert body["type"] == "run.failed"
    assert body["data"]["run"]["status"] == "done_with_errors"


def test_retries_after_a_500_with_the_same_message_id(
    project, owner, secret, django_capture_on_commit_callbacks
):
    receiver = Receiver(statuses=[500, 200])
    try:
        webhook = make_webhook(project, owner, receiver.url, secret)
        run = RunFactory(project=project, status=Run.Status.RUNNING)
        finish(run.pk, django_capture_on_commit_callbacks)
    finally:
        receiver.close()
    assert len(receiver.requests) == 2
    ids = {r["headers"]["webhook-id"] for r in receiver.requests}
    assert len(ids) == 1
    delivery = Delivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        Delivery.Status.SUCCEEDED,
        2,
        200,
    )
    assert delivery.error == ""


@override_settings(WEBHOOK_MAX_ATTEMPTS=3)
def test_a_receiver_that_keeps_failing_is_logged_failed_after_the_attempts(
    project, owner, secret, django_capture_on_commit_callbacks
):
    receiver = Receiver(statuses=[503])
    try:
        webhook = make_webhook(project, owner, receiver.url, secret)
        run = RunFactory(project=project, status=Run.Status.RUNNING)
        finish(run.pk, django_capture_on_commit_callbacks)
    finally:
        receiver.close()
    assert len(receiver.requests) == 3
    delivery = Delivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        Delivery.Status.FAILED,
        3,
        503,
    )
    assert "receiver says no" in delivery.error


@override_settings(WEBHOOK_MAX_ATTEMPTS=2)
def test_a_receiver_that_is_down_is_retried_then_failed(
    project, owner, secret, django_capture_on_commit_callbacks
):
    receiver = Receiver()
    url = receiver.url
    receiver.close()  # nothing listens on that port any more
    webhook = make_webhook(project, owner, url, secret)
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    finish(run.pk, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get(webhook=webhook)
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        Delivery.Status.FAILED,
        2,
        None,
    )
    assert "ConnectError" in delivery.error


def test_a_refused_address_is_never_contacted(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    webhook = make_webhook(project, owner, receiver.url, secret)
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    # The shipped policy: loopback is not for webhooks (nor judges) unless allowed.
    with override_settings(DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[]):
        finish(run.pk, django_capture_on_commit_callbacks)
    assert receiver.requests == []
    delivery = Delivery.objects.get(webhook=webhook)
    # Refused by policy: not retried (the address will not become allowed).
    assert (delivery.status, delivery.attempts) == (Delivery.Status.FAILED, 1)
    assert "loopback" in delivery.error


def test_a_loopback_url_is_refused_when_saved(project, owner, receiver, secret):
    with (
        override_settings(DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[]),
        pytest.raises(ApplicationError) as raised,
    ):
        make_webhook(project, owner, receiver.url, secret)
    assert "loopback" in raised.value.field_errors["url"]
    assert not Webhook.objects.exists()


def test_a_redirect_is_not_followed(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    target = Receiver()
    try:
        redirecting = Receiver(statuses=[307])
        redirecting.location = target.url
        try:
            webhook = make_webhook(project, owner, redirecting.url, secret)
            with override_settings(WEBHOOK_MAX_ATTEMPTS=1):
                finish(
                    RunFactory(project=project, status=Run.Status.RUNNING).pk,
                    django_capture_on_commit_callbacks,
                )
        finally:
            redirecting.close()
        assert target.requests == []
    finally:
        target.close()
    delivery = Delivery.objects.get(webhook=webhook)
    assert delivery.status == Delivery.Status.FAILED
    assert delivery.response_code == 307
    assert "redirect" in delivery.error


def test_an_inactive_webhook_gets_nothing(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    make_webhook(project, owner, receiver.url, secret, active=False)
    finish(
        RunFactory(project=project, status=Run.Status.RUNNING).pk,
        django_capture_on_commit_callbacks,
    )
    assert receiver.requests == []
    assert not Delivery.objects.exists()


def test_each_event_is_delivered_once(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    make_webhook(project, owner, receiver.url, secret)
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    finish(run.pk, django_capture_on_commit_callbacks)
    # The task run again (a retried message) makes no second delivery.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_event(run_id=run.pk) == []
    assert len(receiver.requests) == 1


# ---------------------------------------------------------------- events


def test_queue_completed_once_every_result_is_reviewed(
    project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    make_webhook(project, owner, receiver.url, secret, events=[Event.QUEUE_COMPLETED])
    run = RunFactory(project=project)
    queue = ReviewQueueFactory(project=project, run=run, name="triage")
    first = ResultFactory(run=run, reviewed=True)
    second = ResultFactory(run=run, reviewed=False)
    QueueEntryFactory(queue=queue, result=first, position=1)
    QueueEntryFactory(queue=queue, result=second, position=2)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.queue_event(queue_id=queue.pk) == []
    assert receiver.requests == []
    Result.objects.filter(pk=second.pk).update(reviewed=True)
    with django_capture_on_commit_callbacks(execute=True):
        assert len(services.queue_event(queue_id=queue.pk)) == 1
        assert services.queue_event(queue_id=queue.pk) == []
    body = json.loads(receiver.requests[0]["body"])
    assert body["type"] == "queue.completed"
    assert body["data"]["queue"] == {
        "id": queue.pk,
        "name": "triage",
        "run_id": run.pk,
        "total": 2,
        "reviewed": 2,
    }
    assert len(receiver.requests) == 1


@pytest.fixture
def baseline(project):
    dataset = DatasetFactory(project=project, name="qa", rows=case_rows(5))
    run = make_run(
        project,
        dataset=dataset,
        analyses={"faithfulness": [judged_claims("yes", "yes")] * 5},
    )
    return run


def candidate(project, baseline, verdicts):
    return make_run(
        project,
        dataset=baseline.dataset,
        status=Run.Status.RUNNING,
        analyses={"faithfulness": [judged_claims(*v) for v in verdicts]},
    )


def test_compare_regression_beyond_the_margin_is_sent(
    project, owner, receiver, secret, baseline, django_capture_on_commit_callbacks
):
    make_webhook(
        project,
        owner,
        receiver.url,
        secret,
        events=[Event.COMPARE_REGRESSION],
        baseline_run_id=baseline.pk,
        margin=0.1,
    )
    worse = candidate(
        project,
        baseline,
        [("no", "no"), ("yes", "no"), ("no", "no"), ("yes", "no"), ("no", "no")],
    )
    finish(worse.pk, django_capture_on_commit_callbacks)
    assert len(receiver.requests) == 1
    body = Verifier(secret).verify(
        receiver.requests[0]["body"], receiver.requests[0]["headers"]
    )
    assert body["type"] == "compare.regression"
    assert body["data"]["baseline_run_id"] == baseline.pk
    [regression] = body["data"]["regressions"]
    assert regression["kind"] == "faithfulness"
    assert regression["n"] == 5
    assert regression["mean_delta"] == pytest.approx(-0.8)
    assert regression["mean_delta_ci_high"] < -0.1


def test_no_regression_when_the_interval_reaches_the_margin(
    project, owner, receiver, secret, baseline, django_capture_on_commit_callbacks
):
    make_webhook(
        project,
        owner,
        receiver.url,
        secret,
        events=[Event.COMPARE_REGRESSION],
        baseline_run_id=baseline.pk,
        margin=0.1,
    )
    # One item of five a little worse: the interval spans zero.
    close = candidate(project, baseline, [("yes", "no")] + [("yes", "yes")] * 4)
    finish(close.pk, django_capture_on_commit_callbacks)
    assert receiver.requests == []


# ------------------------------------------------------------ pages and API


def test_pages_create_edit_and_never_show_the_secret(
    client, project, owner, receiver, secret
):
    login(client, owner)
    url = f"/projects/{project.pk}/webhooks/"
    response = client.post(
        url,
        {
            "name": "ci",
            "url": receiver.url,
            "secret": secret,
            "events": ["run.finished", "queue.completed"],
            "active": "on",
            "margin": "0",
        },
    )
    assert response.status_code == 302
    webhook = Webhook.objects.get()
    assert webhook.events == ["run.finished", "queue.completed"]
    assert secret not in webhook.secret_encrypted
    raw = secret.removeprefix("whsec_")
    for page in (url, f"{url}{webhook.pk}/", f"{url}{webhook.pk}/deliveries/"):
        body = client.get(page).content.decode()
        assert raw not in body and webhook.secret_encrypted not in body
    # Saving without a secret keeps it.
    response = client.post(
        f"{url}{webhook.pk}/",
        {
            "name": "ci2",
            "url": receiver.url,
            "events": ["run.failed"],
            "margin": "0",
        },
    )
    assert response.status_code == 302
    webhook.refresh_from_db()
    assert (webhook.name, webhook.events, webhook.active) == (
        "ci2",
        ["run.failed"],
        False,
    )
    assert secret_decrypt(webhook.secret_encrypted) == secret
    # A malformed secret is refused on its field.
    response = client.post(
        url,
        {
            "name": "x",
            "url": receiver.url,
            "secret": "hunter2",
            "events": ["run.failed"],
            "margin": "0",
        },
    )
    assert response.status_code == 400
    assert "whsec_" in response.content.decode()
    assert "hunter2" not in response.content.decode()


def test_delivery_log_and_redeliver(
    client, project, owner, receiver, secret, django_capture_on_commit_callbacks
):
    webhook = make_webhook(project, owner, receiver.url, secret)
    finish(
        RunFactory(project=project, status=Run.Status.RUNNING).pk,
        django_capture_on_commit_callbacks,
    )
    delivery = Delivery.objects.get()
    login(client, owner)
    log = client.get(f"/projects/{project.pk}/webhooks/{webhook.pk}/deliveries/")
    assert log.status_code == 200
    assert "run.finished" in log.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/projects/{project.pk}/webhooks/{webhook.pk}/deliveries/"
            f"{delivery.pk}/redeliver"
        )
    assert response.status_code == 302
    assert len(receiver.requests) == 2
    assert receiver.requests[0]["body"] == receiver.requests[1]["body"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.SUCCEEDED, 2)


def test_api_create_list_patch_delete_without_the_secret(
    client, project, owner, receiver, secret
):
    headers = bearer(owner)
    base = f"/api/projects/{project.pk}/webhooks"
    response = client.post(
        base,
        {"name": "ci", "url": receiver.url, "secret": secret, "events": ["run.failed"]},
        content_type="application/json",
        **headers,
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["has_secret"] is True
    assert "secret" not in created and secret not in response.content.decode()
    listed = client.get(base, **headers).json()
    assert [w["id"] for w in listed["items"]] == [created["id"]]
    response = client.patch(
        f"{base}/{created['id']}",
        {"events": ["run.finished", "compare.regression"]},
        content_type="application/json",
        **headers,
    )
    # compare.regression needs a baseline run.
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "baseline_run"
    response = client.patch(
        f"{base}/{created['id']}",
        {"active": False},
        content_type="application/json",
        **headers,
    )
    assert response.status_code == 200 and response.json()["active"] is False
    deliveries = client.get(f"{base}/{created['id']}/deliveries", **headers)
    assert deliveries.status_code == 200 and deliveries.json()["items"] == []
    assert client.delete(f"{base}/{created['id']}", **headers).status_code == 204
    assert not Webhook.objects.exists()


def test_another_projects_ids_are_404_and_non_owners_403(
    client,
    project,
    owner,
    reviewer,
    receiver,
    secret,
    django_capture_on_commit_callbacks,
):
    other_owner = UserFactory(username="mallory")
    other = ProjectFactory(name="Other")
    MembershipFactory(project=other, user=other_owner, role="owner")
    theirs = make_webhook(other, other_owner, receiver.url, secret)
    finish(
        RunFactory(project=other, status=Run.Status.RUNNING).pk,
        django_capture_on_commit_callbacks,
    )
    their_delivery = Delivery.objects.get()
    mine = make_webhook(project, owner, receiver.url, secret)

    login(client, owner)
    pages = f"/projects/{project.pk}/webhooks/"
    assert client.get(f"{pages}{theirs.pk}/").status_code == 404
    assert client.get(f"{pages}{theirs.pk}/deliveries/").status_code == 404
    assert client.post(f"{pages}{theirs.pk}/delete").status_code == 404
    assert (
        client.post(
            f"{pages}{mine.pk}/deliveries/{their_delivery.pk}/redeliver"
        ).status_code
        == 404
    )
    headers = bearer(owner)
    api = f"/api/projects/{project.pk}/webhooks"
    assert client.get(f"{api}/{theirs.pk}", **headers).status_code == 404
    assert client.delete(f"{api}/{theirs.pk}", **headers).status_code == 404
    assert (
        client.post(
            f"{api}/{mine.pk}/deliveries/{their_delivery.pk}/redeliver", **headers
        ).status_code
        == 404
    )
    assert (
        client.get(f"/api/projects/{other.pk}/webhooks", **headers).status_code == 404
    )
    assert Webhook.objects.filter(pk=theirs.pk).exists()

    login(client, reviewer)
    assert client.get(pages).status_code == 403
    assert (
        client.get(
            f"/api/projects/{project.pk}/webhooks", **bearer(reviewer)
        ).status_code
        == 403
    )


def test_the_answer_that_decides_a_queues_last_result_sends_queue_completed(
    project, owner, reviewer, receiver, secret, django_capture_on_commit_callbacks
):
    second = UserFactory(username="bea")
    MembershipFactory(project=project, user=second, role="reviewer")
    make_webhook(project, owner, receiver.url, secret, events=[Event.QUEUE_COMPLETED])
    run = make_run(project, n_items=1)
    queue = queue_create(
        run=run, user=reviewer, query=ResultQuery(sort="item"), overlap=2
    )
    result = QueueEntry.objects.get(queue=queue, position=1).result
    with django_capture_on_commit_callbacks(execute=True):
        review_answer(queue=queue, result=result, user=reviewer, passed=False)
    assert receiver.requests == []
    with django_capture_on_commit_callbacks(execute=True):
        outcome = review_answer(queue=queue, result=result, user=second, passed=False)
    assert outcome.decided
    [request] = receiver.requests
    payload = Verifier(secret).verify(request["body"], request["headers"])
    assert payload["type"] == "queue.completed"
    assert payload["data"]["queue"]["id"] == queue.pk


def test_text_the_database_cannot_store_is_a_field_error(
    client, project, owner, secret
):
    response = client.post(
        f"/api/projects/{project.pk}/webhooks",
        {
            "name": "ci\x00",
            "url": "http://127.0.0.1:9/hook",
            "secret": secret,
            "events": ["run.failed"],
        },
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "name"
    assert not Webhook.objects.exists()
