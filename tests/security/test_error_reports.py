"""A judge URL no HTTP client can use is refused at save and fails calls with a message
(never a 500), and no error page or error report shows a setting or environment value
that carries a credential, with DEBUG on as under ``make run``."""

from __future__ import annotations

import logging
import os
import sys

import pytest
from django.core import mail
from django.test import RequestFactory, override_settings
from django.urls import reverse
from django.utils.log import AdminEmailHandler
from django.views.debug import ExceptionReporter, technical_500_response

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.judges import services as judge_services
from evalsite.evals.judges.egress import judge_url_problem
from evalsite.evals.models import JudgeConnection, Result
from scoring import make_async_client, make_client
from scoring.errors import JudgeURLError
from tests.security.test_judge_egress import dataset_with_run  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

# The audit's URL: "①②⑧" is not valid IDNA (the Python codec would map it to "128").
BAD_URL = "http://①②⑧.0.0.1:19211/v1"
FORM = {
    "name": "x",
    "model": "m",
    "temperature": 0,
    "timeout_seconds": 5,
    "max_concurrency": 1,
    "requests_per_minute": 0,
}


# ------------------------------------------------------------ hosts checked at save


@pytest.mark.parametrize("url", [BAD_URL, "http://999.1.1.1/v1", "http://[::zz]/v1"])
def test_a_host_the_client_cannot_parse_is_refused(url):
    problem = judge_url_problem(url)
    assert problem and "Enter a valid" in problem


def test_a_valid_international_name_is_accepted():
    assert judge_url_problem("https://bücher.example/v1") is None


def test_the_service_refuses_an_invalid_idna_host(project, owner):
    with pytest.raises(ApplicationError) as raised:
        judge_services.judge_create(
            project=project, user=owner, name="x", base_url=BAD_URL, model="m"
        )
    assert "valid host name" in raised.value.field_errors["base_url"]
    assert not JudgeConnection.objects.filter(name="x").exists()


def test_the_form_refuses_an_invalid_idna_host(owner_client, project):
    response = owner_client.post(
        reverse("evals:judge_create", args=[project.pk]),
        {**FORM, "base_url": BAD_URL},
    )
    assert response.status_code == 400
    assert "valid host name" in response.content.decode()
    assert not JudgeConnection.objects.filter(name="x").exists()


def test_the_api_refuses_an_invalid_idna_host(client, project, owner, bearer):
    response = client.post(
        f"/api/projects/{project.pk}/judges",
        {"name": "x", "base_url": BAD_URL, "model": "m"},
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 400
    assert "valid host name" in str(response.json())
    assert not JudgeConnection.objects.filter(name="x").exists()


# ----------------------------------------------- a bad URL already stored: no 500


@pytest.fixture
def stored_bad_judge(project, owner, listener):
    judge = judge_services.judge_create(
        project=project, user=owner, name="Old", base_url=listener.url, model="m"
    )
    # Saved before hosts were checked (or by hand): the row holds the bad URL.
    JudgeConnection.objects.filter(pk=judge.pk).update(base_url=BAD_URL)
    judge.refresh_from_db()
    return judge


def test_the_clients_refuse_the_url_with_a_scoring_error():
    for factory in (make_client, make_async_client):
        with pytest.raises(JudgeURLError, match="Invalid IDNA hostname"):
            factory(BAD_URL, None, 5)


def test_test_connection_of_a_stored_bad_url_answers_a_message(
    client, project, owner, stored_bad_judge, bearer
):
    outcome = judge_services.judge_test(judge=stored_bad_judge)
    assert not outcome.ok and "base URL cannot be used" in outcome.message
    client.force_login(owner)
    client.raise_request_exception = False
    with override_settings(DEBUG=True):
        url = reverse("evals:judge_test", args=[project.pk, stored_bad_judge.pk])
        page = client.post(url, follow=True)
        partial = client.post(url, HTTP_HX_REQUEST="true")
    assert page.status_code == partial.status_code == 200
    assert "base URL cannot be used" in page.content.decode()
    assert "base URL cannot be used" in partial.content.decode()
    api = client.post(f"/api/judges/{stored_bad_judge.pk}/test", **bearer(owner))
    assert api.status_code == 200
    assert api.json()["ok"] is False
    assert "base URL cannot be used" in api.json()["message"]


def test_a_run_on_a_stored_bad_url_fails_its_results_with_the_reason(
    stored_bad_judge,
    dataset_with_run,  # noqa: F811 - the imported fixture
    caplog,
):
    result = dataset_with_run(stored_bad_judge)
    with caplog.at_level(logging.ERROR):
        run_dispatch(run_id=result.run_id)
    result.refresh_from_db()
    assert result.status == Result.Status.ERROR
    assert result.error.startswith("The judge's base URL cannot be used")
    assert "unexpected error" not in result.error
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# ------------------------------------------ error pages and reports hide credentials

DB_URL = "postgres://evalsite:db-pw-5150@db.internal:5432/evalsite"
REDIS = "redis://:redis-pw-8086@cache.internal:6379/0"
ENV_PASSWORD = "smtp-pw-1701"
ENV_DSN = "amqp://worker:mq-pw-2600@mq.internal/"
SECRETS = ("db-pw-5150", "redis-pw-8086", ENV_PASSWORD, "mq-pw-2600")


def _failing_request_and_exc_info(monkeypatch):
    """A request as the development server builds it (the process environment is in
    its META), and the exception of a frame holding a DSN in a local."""
    monkeypatch.setenv("DATABASE_URL", DB_URL)
    monkeypatch.setenv("REDIS_URL", REDIS)
    monkeypatch.setenv("EVALSITE_SMTP_PASSWORD", ENV_PASSWORD)
    monkeypatch.setenv("WORKER_QUEUE", ENV_DSN)  # a name that says nothing
    request = RequestFactory().get("/boom", **dict(os.environ))

    def view() -> None:
        broker = ENV_DSN  # noqa: F841 - a local the traceback shows
        raise RuntimeError("boom")

    try:
        view()
    except RuntimeError:
        return request, sys.exc_info()
    raise AssertionError("unreachable")


SETTINGS = override_settings(
    DEBUG=True,
    DATABASE_URL=DB_URL,
    REDIS_URL=REDIS,
    CELERY_BROKER_URL=REDIS,
    CACHES={
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"server": REDIS},
        }
    },
    ADMINS=[("Ops", "ops@example.com")],
)


def _assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret


@SETTINGS
def test_the_debug_500_page_shows_no_credential_setting_or_environment_value(
    monkeypatch,
):
    request, exc_info = _failing_request_and_exc_info(monkeypatch)
    body = technical_500_response(request, *exc_info).content.decode()
    assert "RuntimeError" in body and "REDIS_URL" in body  # the debug page, cleansed
    _assert_clean(body)


@SETTINGS
def test_a_debug_500_from_a_real_view_shows_no_credentials(client, owner, monkeypatch):
    monkeypatch.setenv("EVALSITE_SMTP_PASSWORD", ENV_PASSWORD)

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("evalsite.accounts.views.render", broken)
    client.force_login(owner)
    client.raise_request_exception = False
    response = client.get(reverse("accounts:dashboard"), **dict(os.environ))
    assert response.status_code == 500 and "RuntimeError" in response.content.decode()
    _assert_clean(response.content.decode())


@SETTINGS
def test_error_reports_in_the_log_show_no_credentials(monkeypatch):
    request, exc_info = _failing_request_and_exc_info(monkeypatch)
    text = ExceptionReporter(request, *exc_info).get_traceback_text()
    assert "RuntimeError" in text
    _assert_clean(text)
    handler = AdminEmailHandler(include_html=True)
    record = logging.LogRecord(
        "django.request", logging.ERROR, __file__, 1, "boom", None, exc_info
    )
    record.request = request
    mail.outbox.clear()
    handler.emit(record)
    (sent,) = mail.outbox
    _assert_clean(sent.body)
    html = sent.alternatives[0][0]
    assert "RuntimeError" in html
    _assert_clean(str(html))
