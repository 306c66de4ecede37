"""A project owner's judge connection cannot carry the server's secrets anywhere, nor
reach the server's own network, nor show a key on any page or in any log.

Judges here point at a real HTTP listener on 127.0.0.1 that records every request it
gets; the shipped policy is tested with DEBUG off and no private hosts allowed.
"""

from __future__ import annotations

import logging

import pytest
from django.test import override_settings
from django.urls import reverse

from evalsite.core.exceptions import ApplicationError
from evalsite.evals import services
from evalsite.evals.models import JudgeConnection, Result, Run
from evalsite.evals.services.egress import judge_url_problem
from tests.evals.conftest import support_rows
from tests.factories import DatasetFactory
from tests.security.listener import Listener

pytestmark = pytest.mark.django_db

KEY = "sk-live-DO-NOT-LEAK-4242"
SHIPPED_POLICY = override_settings(DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[])


def _judge(project, owner, url, **fields) -> JudgeConnection:
    return services.judge_create(
        project=project,
        user=owner,
        name=fields.pop("name", "Mine"),
        base_url=url,
        model="m",
        **fields,
    )


# ---------------------------------------------------------------- 1. api_key_env


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "PATH"])
def test_judge_key_env_refuses_a_server_secret_at_create_and_update(
    project, owner, listener, name
):
    with pytest.raises(ApplicationError) as raised:
        _judge(project, owner, listener.url, api_key_env=name)
    assert "api_key_env" in raised.value.field_errors
    assert "EVALSITE_JUDGE_KEY_" in raised.value.field_errors["api_key_env"]
    judge = _judge(project, owner, listener.url)
    with pytest.raises(ApplicationError) as raised:
        services.judge_update(judge=judge, user=owner, api_key_env=name)
    assert "api_key_env" in raised.value.field_errors
    judge.refresh_from_db()
    assert judge.api_key_env == ""


def test_judge_key_env_of_an_allowed_name_is_sent(
    project, owner, listener, monkeypatch
):
    monkeypatch.setenv("EVALSITE_JUDGE_KEY_TEAM", KEY)
    judge = _judge(project, owner, listener.url, api_key_env="EVALSITE_JUDGE_KEY_TEAM")
    assert services.judge_test(judge=judge).ok
    assert listener.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"


def test_an_empty_allow_list_refuses_every_name_and_says_so(project, owner, listener):
    with (
        override_settings(JUDGE_KEY_ENV_ALLOWED=[]),
        pytest.raises(ApplicationError) as raised,
    ):
        _judge(project, owner, listener.url, api_key_env="OPENAI_API_KEY")
    message = raised.value.field_errors["api_key_env"]
    assert "allows no variable names" in message and "enter the key" in message


def test_judge_key_env_set_behind_the_services_back_is_refused_at_use(
    project, owner, listener, dataset_with_run, monkeypatch, settings
):
    # A row written before the rule existed (or by hand) still cannot send the secret.
    judge = _judge(project, owner, listener.url)
    JudgeConnection.objects.filter(pk=judge.pk).update(
        api_key_env="SECRET_KEY", api_key_url=judge.base_url
    )
    judge.refresh_from_db()
    outcome = services.judge_test(judge=judge)
    assert not outcome.ok and "SECRET_KEY" in outcome.message
    result = dataset_with_run(judge)
    assert services.result_score(result_id=result.pk) == "error"
    result.refresh_from_db()
    assert "does not let judges read SECRET_KEY" in result.error
    assert listener.requests == []
    assert not listener.seen(settings.SECRET_KEY)


def test_api_refuses_a_server_secret_as_key_env(
    client, project, owner, listener, bearer
):
    response = client.post(
        f"/api/projects/{project.pk}/judges",
        {
            "name": "x",
            "base_url": listener.url,
            "model": "m",
            "api_key_env": "SECRET_KEY",
        },
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 400
    assert "SECRET_KEY" in response.json()["detail"]
    assert not JudgeConnection.objects.filter(name="x").exists()


def test_judge_form_shows_the_key_env_field_error(owner_client, project, listener):
    response = owner_client.post(
        reverse("evals:judge_create", args=[project.pk]),
        {
            "name": "x",
            "base_url": listener.url,
            "model": "m",
            "api_key_env": "DATABASE_URL",
            "temperature": 0,
            "timeout_seconds": 5,
            "max_concurrency": 1,
            "requests_per_minute": 0,
        },
    )
    assert response.status_code == 400
    assert "does not let judges read DATABASE_URL" in response.content.decode()


# ---------------------------------------------------------------- 2. key and URL


def test_a_new_url_needs_the_key_again(project, owner, listener, other_listener):
    judge = _judge(project, owner, listener.url, api_key=KEY)
    with pytest.raises(ApplicationError) as raised:
        services.judge_update(judge=judge, user=owner, base_url=other_listener.url)
    assert "api_key" in raised.value.field_errors
    judge.refresh_from_db()
    assert judge.base_url == listener.url and judge.has_api_key
    # With the key entered again (or removed), the change is saved.
    services.judge_update(
        judge=judge, user=owner, base_url=other_listener.url, api_key="sk-other"
    )
    assert services.judge_test(judge=judge).ok
    assert other_listener.requests[0]["headers"]["authorization"] == "Bearer sk-other"
    assert not other_listener.seen(KEY)


def test_a_url_changed_behind_the_services_back_never_gets_the_key(
    project, owner, listener, other_listener
):
    # The admin or a hand-written UPDATE moves the URL; the key stays bound to the old one.
    judge = _judge(project, owner, listener.url, api_key=KEY)
    JudgeConnection.objects.filter(pk=judge.pk).update(base_url=other_listener.url)
    judge.refresh_from_db()
    outcome = services.judge_test(judge=judge)
    assert not outcome.ok and "entered for another URL" in outcome.message
    assert other_listener.requests == [] and listener.requests == []


def test_api_patch_of_the_url_alone_is_refused_with_a_field_error(
    client, project, owner, listener, other_listener, bearer
):
    judge = _judge(project, owner, listener.url, api_key=KEY)
    response = client.patch(
        f"/api/judges/{judge.pk}",
        {"base_url": other_listener.url},
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 400
    assert "key" in response.json()["detail"]
    judge.refresh_from_db()
    assert judge.base_url == listener.url


# ---------------------------------------------------------------- 3. SSRF


LOOPBACK_FORMS = [
    "http://127.0.0.1:{port}/v1",
    "http://2130706433:{port}/v1",  # decimal
    "http://0x7f000001:{port}/v1",  # hexadecimal
    "http://127.1:{port}/v1",  # short form
    "http://0177.0.0.1:{port}/v1",  # octal
    "http://localhost:{port}/v1",
    "http://[::1]:{port}/v1",
    "http://[::ffff:127.0.0.1]:{port}/v1",  # IPv4-mapped IPv6
]
PRIVATE_URLS = [
    "http://10.0.0.1/v1",
    "http://192.168.1.10:8080/v1",
    "http://172.16.0.5/v1",
    "http://169.254.169.254/latest/meta-data",  # cloud metadata
    "http://100.64.0.1/v1",  # carrier-grade NAT
    "http://[fd00:ec2::254]/v1",  # AWS metadata over IPv6
    "http://0.0.0.0:{port}/v1",
    # IPv6 forms carrying an IPv4 address: a NAT64 gateway (IPv6-only hosts) or a 6to4
    # relay translates them to that address.
    "http://[64:ff9b::a9fe:a9fe]/v1",  # NAT64 of the metadata address
    "http://[64:ff9b::a00:1]/v1",  # NAT64 of 10.0.0.1
    "http://[::127.0.0.1]:{port}/v1",  # IPv4-compatible (deprecated)
    "http://[2002:7f00:1::1]:{port}/v1",  # 6to4 of 127.0.0.1
    "http://[64:ff9b:1::a00:1]/v1",  # local-use NAT64
    "http://[fec0::1]/v1",  # site-local (deprecated)
]


@SHIPPED_POLICY
@pytest.mark.parametrize("form", LOOPBACK_FORMS + PRIVATE_URLS)
def test_judge_url_to_the_servers_own_network_is_refused(
    project, owner, listener, form
):
    url = form.format(port=listener.port)
    with pytest.raises(ApplicationError) as raised:
        _judge(project, owner, url)
    assert "JUDGE_ALLOWED_PRIVATE_HOSTS" in raised.value.field_errors["base_url"]
    assert listener.requests == []


@SHIPPED_POLICY
@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8/v1",
        "http://[2606:4700:4700::1111]/v1",
        "http://[64:ff9b::808:808]/v1",  # NAT64 of a public address
        "http://[2002:808:808::1]/v1",  # 6to4 of a public address
    ],
)
def test_public_addresses_are_allowed_in_any_form(url):
    assert judge_url_problem(url) is None


@pytest.mark.parametrize(
    "url",
    ["http://user:pass@api.example.com/v1", "https://sk-abc@api.example.com/v1"],
)
def test_judge_url_with_credentials_is_refused(project, owner, url):
    with pytest.raises(ApplicationError) as raised:
        _judge(project, owner, url)
    assert "user name and password" in raised.value.field_errors["base_url"]


def test_the_policy_is_checked_on_every_connection_not_only_on_save(
    project, owner, listener
):
    # Saved while allowed (or a name that resolved elsewhere then: DNS rebinding).
    judge = _judge(project, owner, listener.url, api_key=KEY)
    with SHIPPED_POLICY:
        outcome = services.judge_test(judge=judge)
    assert not outcome.ok and "loopback" in outcome.message
    assert listener.requests == []


def test_test_results_do_not_tell_open_from_closed_ports(project, owner, listener):
    closed = Listener()
    closed_port = closed.port
    closed.close()
    open_judge = _judge(project, owner, listener.url, name="open")
    closed_judge = _judge(
        project, owner, f"http://127.0.0.1:{closed_port}/v1", name="closed"
    )
    with SHIPPED_POLICY:
        open_msg = services.judge_test(judge=open_judge).message
        closed_msg = services.judge_test(judge=closed_judge).message
    assert open_msg.replace(str(listener.port), "P") == closed_msg.replace(
        str(closed_port), "P"
    )
    assert listener.requests == []


def test_a_redirect_is_never_followed(project, owner, listener, other_listener):
    listener.reply = (307, {"Location": f"{other_listener.url}/chat/completions"}, b"")
    judge = _judge(project, owner, listener.url, api_key=KEY)
    outcome = services.judge_test(judge=judge)
    assert not outcome.ok
    assert "HTTP 307" in outcome.message and "redirect" in outcome.message
    assert other_listener.requests == []


def test_a_run_never_follows_a_redirect_either(
    project, owner, listener, other_listener, dataset_with_run
):
    listener.reply = (302, {"Location": f"{other_listener.url}/chat/completions"}, b"")
    judge = _judge(project, owner, listener.url, api_key=KEY)
    result = dataset_with_run(judge)
    assert services.result_score(result_id=result.pk) == "error"
    assert other_listener.requests == []


def test_an_allowed_private_host_is_allowed_on_that_port_only(project, owner, listener):
    with override_settings(
        DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{listener.port}"]
    ):
        assert services.judge_test(judge=_judge(project, owner, listener.url)).ok
        with pytest.raises(ApplicationError):
            _judge(project, owner, f"http://127.0.0.1:{listener.port + 1}/v1", name="b")


def test_loopback_is_allowed_in_debug_for_make_runs_offline_judge(
    project, owner, listener
):
    with override_settings(DEBUG=True, JUDGE_ALLOWED_PRIVATE_HOSTS=[]):
        assert services.judge_test(judge=_judge(project, owner, listener.url)).ok


def test_the_configured_offline_judge_is_allowed_without_debug(
    project, owner, listener
):
    with override_settings(
        DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[], OFFLINE_JUDGE_URL=listener.url
    ):
        assert services.judge_test(judge=_judge(project, owner, listener.url)).ok


# ---------------------------------------------------------------- 4. errors and pages


@pytest.mark.parametrize(
    "reply",
    [
        (200, {"Content-Type": "text/html"}, b"<html>internal admin console</html>"),
        (200, {"Content-Type": "application/json"}, b'{"internal": "admin console"}'),
        (
            500,
            {"Content-Type": "application/json"},
            b'{"error": {"message": "internal admin console"}}',
        ),
        (401, {"Content-Type": "text/plain"}, b"internal admin console"),
    ],
)
def test_judge_test_reports_any_reply_as_a_message_without_echoing_it(
    project, owner, listener, reply
):
    listener.reply = reply
    outcome = services.judge_test(
        judge=_judge(project, owner, listener.url, api_key=KEY)
    )
    assert not outcome.ok
    assert f"127.0.0.1:{listener.port}" in outcome.message
    assert "admin console" not in outcome.message and KEY not in outcome.message


def test_an_unexpected_error_page_shows_no_key_even_in_debug(
    client, project, owner, listener, monkeypatch
):
    judge = _judge(project, owner, listener.url, api_key=KEY)

    def broken(base_url, api_key, timeout, **kwargs):  # as scoring.make_client
        raise RuntimeError("boom")

    monkeypatch.setattr("evalsite.evals.services.judges.make_client", broken)
    client.force_login(owner)
    client.raise_request_exception = False
    with override_settings(DEBUG=True):
        response = client.post(reverse("evals:judge_test", args=[project.pk, judge.pk]))
    assert response.status_code == 500
    body = response.content.decode()
    assert "RuntimeError" in body  # it is the debug page
    assert KEY not in body


def test_the_judge_form_post_with_a_key_shows_no_key_on_an_error_page(
    client, project, owner, listener, monkeypatch
):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("evalsite.evals.services.judge_create", broken)
    client.force_login(owner)
    client.raise_request_exception = False
    with override_settings(DEBUG=True):
        response = client.post(
            reverse("evals:judge_create", args=[project.pk]),
            {
                "name": "x",
                "base_url": listener.url,
                "model": "m",
                "api_key": KEY,
                "temperature": 0,
                "timeout_seconds": 5,
                "max_concurrency": 1,
                "requests_per_minute": 0,
            },
        )
    assert response.status_code == 500
    assert KEY not in response.content.decode()


def test_no_key_in_the_logs_of_a_failing_run(
    project, owner, listener, dataset_with_run, caplog
):
    listener.reply = (200, {"Content-Type": "text/html"}, b"<html>nope</html>")
    judge = _judge(project, owner, listener.url, api_key=KEY)
    result = dataset_with_run(judge)
    with caplog.at_level(logging.DEBUG):
        assert services.result_score(result_id=result.pk) == "error"
        services.judge_test(judge=judge)
    assert listener.seen(KEY)  # the key did go where it was entered for
    assert KEY not in caplog.text
    result.refresh_from_db()
    assert KEY not in result.error


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def dataset_with_run(project, owner):
    def _make(judge: JudgeConnection) -> Result:
        scorer = services.scorer_create(
            project=project,
            user=owner,
            name=f"F{judge.pk}",
            kind="faithfulness",
            judge=judge,
        )
        run = services.run_start(
            project=project,
            user=owner,
            dataset=DatasetFactory(
                project=project, name="support", rows=support_rows(1)
            ),
            scorers=[scorer],
            enqueue=False,
        )
        Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
        return run.results.get()

    return _make


def test_the_offline_judge_cannot_be_repointed_at_another_endpoint(
    project, owner, listener
):
    # Reviewers may start runs on the built-in judge; repointed, it would spend money.
    offline = services.judge_create_offline(project)
    with pytest.raises(ApplicationError) as raised:
        services.judge_update(judge=offline, user=owner, base_url=listener.url)
    assert "base_url" in raised.value.field_errors
    offline.refresh_from_db()
    assert offline.base_url != listener.url
    services.judge_update(
        judge=offline, user=owner, max_concurrency=4
    )  # the rest may change


# The dispatcher (many results per worker slot, asyncio client) keeps every rule of the
# one-result path: same guard on each connection, no redirects, key rules at use.


def _dispatch(result: Result) -> Result:
    services.run_dispatch(run_id=result.run_id)
    result.refresh_from_db()
    return result


def test_a_dispatched_run_never_follows_a_redirect(
    project, owner, listener, other_listener, dataset_with_run
):
    listener.reply = (302, {"Location": f"{other_listener.url}/chat/completions"}, b"")
    judge = _judge(project, owner, listener.url, api_key=KEY)
    result = _dispatch(dataset_with_run(judge))
    assert result.status == Result.Status.ERROR and "HTTP 302" in result.error
    assert other_listener.requests == []


def test_a_dispatched_run_checks_the_address_on_every_connection(
    project, owner, listener, dataset_with_run
):
    # Saved while loopback was allowed; the policy at call time refuses it.
    judge = _judge(project, owner, listener.url, api_key=KEY)
    result = dataset_with_run(judge)
    with SHIPPED_POLICY:
        result = _dispatch(result)
    assert result.status == Result.Status.ERROR
    assert "which judges may not reach" in result.error
    assert listener.requests == []


def test_no_key_in_the_logs_of_a_failing_dispatched_run(
    project, owner, listener, dataset_with_run, caplog
):
    listener.reply = (200, {"Content-Type": "text/html"}, b"<html>nope</html>")
    judge = _judge(project, owner, listener.url, api_key=KEY)
    with caplog.at_level(logging.DEBUG):
        result = _dispatch(dataset_with_run(judge))
    assert result.status == Result.Status.ERROR
    assert listener.seen(KEY)
    assert KEY not in caplog.text and KEY not in result.error


def test_a_dispatched_run_refuses_a_key_env_outside_the_allowed_names(
    project, owner, listener, dataset_with_run, settings
):
    judge = _judge(project, owner, listener.url)
    JudgeConnection.objects.filter(pk=judge.pk).update(
        api_key_env="SECRET_KEY", api_key_url=judge.base_url
    )
    judge.refresh_from_db()
    result = _dispatch(dataset_with_run(judge))
    assert result.status == Result.Status.ERROR
    assert "does not let judges read SECRET_KEY" in result.error
    assert listener.requests == []
    assert not listener.seen(settings.SECRET_KEY)
