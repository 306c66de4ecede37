"""Judge connection services: keys, the connection test."""

from __future__ import annotations

import pytest

from evalsite.accounts.services import project_create
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.crypto import SecretUnreadableError, secret_decrypt, secret_encrypt
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeConnection, Result, Run
from evalsite.evals.runs import services as run_services
from tests.evals.conftest import judge_control

pytestmark = pytest.mark.django_db


def _start(project, owner, dataset, scorers, capture):
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    run.refresh_from_db()
    return run


def test_project_create_adds_the_offline_judge_connection(owner):
    project = project_create(user=owner, name="Fresh")
    judge = JudgeConnection.objects.get(project=project)
    assert judge.is_offline
    assert judge.model == "offline-judge"
    assert judge.base_url == "http://127.0.0.1:8011/v1" or judge.base_url.endswith(
        "/v1"
    )


def test_secret_encrypt_round_trips_and_hides_the_plaintext():
    token = secret_encrypt("sk-live-abc123")
    assert "sk-live-abc123" not in token
    assert secret_decrypt(token) == "sk-live-abc123"


def test_secret_decrypt_rejects_a_token_made_with_another_secret_key(settings):
    token = secret_encrypt("sk-live-abc123")
    settings.SECRET_KEY = "another-secret-key-entirely-0123456789abcdef"
    with pytest.raises(SecretUnreadableError, match="SECRET_KEY"):
        secret_decrypt(token)


def test_judge_create_stores_the_key_encrypted_only(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="GPT",
        base_url="https://api.example.com/v1/",
        model="gpt-4o-mini",
        api_key="sk-live-abc123",
    )
    judge.refresh_from_db()
    assert judge.base_url == "https://api.example.com/v1"
    assert judge.has_api_key
    assert "sk-live-abc123" not in judge.api_key_encrypted
    assert judge_services.judge_api_key(judge=judge) == "sk-live-abc123"


def test_judge_api_key_reads_the_named_environment_variable(
    project, owner, monkeypatch, settings
):
    settings.JUDGE_KEY_ENV_ALLOWED = ["EVALSITE_JUDGE_KEY_*@api.example.com"]
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="Env",
        base_url="https://api.example.com/v1",
        model="m",
        api_key_env="EVALSITE_JUDGE_KEY_TEST",
    )
    monkeypatch.setenv("EVALSITE_JUDGE_KEY_TEST", "sk-from-env")
    assert judge_services.judge_api_key(judge=judge) == "sk-from-env"
    monkeypatch.delenv("EVALSITE_JUDGE_KEY_TEST")
    with pytest.raises(ApplicationError, match="EVALSITE_JUDGE_KEY_TEST is not set"):
        judge_services.judge_api_key(judge=judge)


def test_judge_update_keeps_the_key_unless_a_new_one_is_given(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="J",
        base_url="http://h/v1",
        model="m",
        api_key="k1",
    )
    judge_services.judge_update(judge=judge, user=owner, model="m2")
    assert judge_services.judge_api_key(judge=judge) == "k1"
    judge_services.judge_update(judge=judge, user=owner, api_key="k2")
    assert judge_services.judge_api_key(judge=judge) == "k2"
    judge_services.judge_update(judge=judge, user=owner, clear_api_key=True)
    assert not judge.has_api_key


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_url", "ftp://x"),
        ("max_concurrency", 0),
        ("temperature", 3),
        ("name", "  "),
        ("price_per_1k_input", -1),
    ],
)
def test_judge_create_names_the_bad_field(project, owner, field, value):
    fields = {"name": "J", "base_url": "http://h/v1", "model": "m", field: value}
    with pytest.raises(ApplicationError) as exc:
        judge_services.judge_create(project=project, user=owner, **fields)
    assert field in exc.value.field_errors


def test_judge_create_rejects_a_duplicate_name(project, owner):
    judge_services.judge_create(
        project=project, user=owner, name="J", base_url="http://h/v1", model="m"
    )
    with pytest.raises(ApplicationError) as exc:
        judge_services.judge_create(
            project=project, user=owner, name="J", base_url="http://h/v1", model="m"
        )
    assert "name" in exc.value.field_errors


def test_judge_test_reports_latency_against_the_offline_judge(judge):
    outcome = judge_services.judge_test(judge=judge)
    assert outcome.ok, outcome.message
    assert outcome.latency_ms > 0


def test_judge_test_reports_the_endpoint_error(judge, offline_judge):
    judge_control(offline_judge, script=["400"])
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok
    # The status, in words; never the remote body (a judge URL may point anywhere).
    assert "HTTP 400" in outcome.message and "Bad request" not in outcome.message


def test_judge_test_reports_an_unreachable_endpoint(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="Nowhere",
        base_url="http://127.0.0.1:9/v1",
        model="m",
    )
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok
    assert "Connection" in outcome.message or "connect" in outcome.message


def test_judge_error_fails_only_that_result_and_the_run_finishes(
    project, owner, dataset, scorers, offline_judge, django_capture_on_commit_callbacks
):
    judge_control(offline_judge, script=["400"])
    run = _start(
        project, owner, dataset, scorers[:1], django_capture_on_commit_callbacks
    )
    assert run.status == Run.Status.DONE_WITH_ERRORS
    failed = Result.objects.get(run=run, status=Result.Status.ERROR)
    assert "HTTP 400" in failed.error
    assert failed.judge_score is None and failed.final_score is None
    assert failed.calls.count() == 1 and failed.calls.get().error
    assert Result.objects.filter(run=run, status=Result.Status.OK).count() == 2


def test_a_judge_error_on_a_result_names_the_host_port_and_what_failed(
    project,
    owner,
    dataset,
    scorers,
    judge,
    offline_judge,
    django_capture_on_commit_callbacks,
):
    """The result says what *Test connection* says (same words), then the step's own
    account."""
    judge_control(offline_judge, script=["400"])
    run = _start(
        project, owner, dataset, scorers[:1], django_capture_on_commit_callbacks
    )
    failed = Result.objects.get(run=run, status=Result.Status.ERROR)
    judge_control(offline_judge, script=["400"])
    tested = judge_services.judge_test(judge=judge).message
    where = judge.base_url.split("//")[1].split("/")[0]  # 127.0.0.1:<port>
    assert tested == (
        f"{where} answered HTTP 400 (the request was refused; check the model name)."
    )
    assert failed.error.startswith(tested + " ")
    assert "HTTP 400" in failed.error.removeprefix(tested)  # the step's account follows


def test_outcome_message_leads_with_the_judge_address_for_any_judge_error(judge):
    from evalsite.evals.engine.dispatch import outcome_message
    from scoring.errors import JudgeError

    where = judge.base_url.split("//")[1].split("/")[0]
    message, _ = outcome_message(
        JudgeError("faithfulness: reply was not valid JSON"),
        [],
        result_id=1,
        judge=judge,
    )
    assert message == f"{where} answered, but: faithfulness: reply was not valid JSON"
    # Not a judge's failure (bad options): said as it is.
    from scoring.errors import OptionsError

    message, _ = outcome_message(
        OptionsError("scale must be positive", field="scale"),
        [],
        result_id=1,
        judge=judge,
    )
    assert message == "scale must be positive"


def test_judge_failure_message_follows_the_cause_chain():
    import httpx
    import openai

    from evalsite.evals.judges.messages import judge_failure_message
    from scoring.errors import JudgeError

    request = httpx.Request("POST", "https://api.example.com/v1/chat/completions")
    status = openai.APIStatusError(
        "nope", response=httpx.Response(429, request=request), body=None
    )
    try:
        try:
            raise status
        except openai.APIStatusError as exc:
            raise JudgeError("factuality: step 'grade': gave up") from exc
    except JudgeError as wrapped:
        message = judge_failure_message(
            wrapped, base_url="https://api.example.com/v1", timeout_seconds=30
        )
    assert (
        message
        == "api.example.com:443 answered HTTP 429 (rate limited; try again later)."
    )
    timeout = openai.APITimeoutError(request=request)
    assert (
        judge_failure_message(
            timeout, base_url="http://10.0.0.5:8080/v1", timeout_seconds=12.5
        )
        == "10.0.0.5:8080 did not answer within 12.5 s."
    )
    refused = openai.APIConnectionError(request=request)
    assert (
        judge_failure_message(
            refused, base_url="http://127.0.0.1:9/v1", timeout_seconds=1
        )
        == "Could not connect to 127.0.0.1:9 (refused, unreachable or unknown host)."
    )
    assert (
        judge_failure_message(
            ValueError("bad JSON"), base_url="http://h/v1", timeout_seconds=1
        )
        is None
    )
