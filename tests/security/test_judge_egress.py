"""A project owner's judge connection cannot carry the server's secrets anywhere, nor
reach the server's own network, nor show a key on any page or in any log.

Judges here point at a real HTTP listener on 127.0.0.1 that records every request it
gets; the shipped policy is tested with DEBUG off and no private hosts allowed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging

import httpx2
import openai
import pytest
from django.core.checks import run_checks
from django.test import override_settings
from django.urls import reverse

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.judges import services as judge_services
from evalsite.evals.judges.egress import (
    judge_key_env_allowed,
    judge_key_env_problem,
    judge_url_problem,
)
from evalsite.evals.judges.services import judge_guard
from evalsite.evals.models import JudgeConnection, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from scoring import make_async_client
from scoring.egress import EgressRefused, refused_cause
from tests.evals.conftest import support_rows
from tests.factories import DatasetFactory
from tests.security.listener import COMPLETION, Listener

pytestmark = pytest.mark.django_db

KEY = "sk-live-DO-NOT-LEAK-4242"
SHIPPED_POLICY = override_settings(DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[])


def _judge(project, owner, url, **fields) -> JudgeConnection:
    return judge_services.judge_create(
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
    # The message lists what the server allows (the shipped default).
    assert "OPENAI_API_KEY@api.openai.com" in raised.value.field_errors["api_key_env"]
    judge = _judge(project, owner, listener.url)
    with pytest.raises(ApplicationError) as raised:
        judge_services.judge_update(judge=judge, user=owner, api_key_env=name)
    assert "api_key_env" in raised.value.field_errors
    judge.refresh_from_db()
    assert judge.api_key_env == ""


def test_judge_key_env_of_an_allowed_name_is_sent_to_its_host(
    project, owner, listener, monkeypatch, settings
):
    monkeypatch.setenv("EVALSITE_JUDGE_KEY_TEAM", KEY)
    settings.JUDGE_KEY_ENV_ALLOWED = [
        f"EVALSITE_JUDGE_KEY_TEAM@http://127.0.0.1:{listener.port}"
    ]
    judge = _judge(project, owner, listener.url, api_key_env="EVALSITE_JUDGE_KEY_TEAM")
    assert judge_services.judge_test(judge=judge).ok
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
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok and "SECRET_KEY" in outcome.message
    result = dataset_with_run(judge)
    assert _dispatch(result).status == Result.Status.ERROR
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


# ------------------------------------------------- 1b. env keys are bound to hosts
# The audit's exfiltration: any signed-in user creates a project, points a judge at a
# host of theirs with api_key_env=OPENAI_API_KEY and presses Test. The server's key goes
# only to the hosts JUDGE_KEY_ENV_ALLOWED binds it to (shipped: api.openai.com).


def test_the_servers_openai_key_is_refused_for_another_host_at_create_and_update(
    project, owner, listener, monkeypatch
):
    # 127.0.0.1 is an allowed private host here (tests/settings.py): reachable, yet
    # not a host the key was entered for.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(ApplicationError) as raised:
        _judge(project, owner, listener.url, api_key_env="OPENAI_API_KEY")
    message = raised.value.field_errors["api_key_env"]
    assert "only to api.openai.com" in message and "127.0.0.1" in message
    assert KEY not in message and KEY not in raised.value.message
    judge = _judge(project, owner, listener.url)
    with pytest.raises(ApplicationError) as raised:
        judge_services.judge_update(
            judge=judge, user=owner, api_key_env="OPENAI_API_KEY"
        )
    assert "api_key_env" in raised.value.field_errors
    judge.refresh_from_db()
    assert judge.api_key_env == "" and listener.requests == []


def test_the_servers_openai_key_set_behind_the_services_back_is_refused_at_use(
    project, owner, listener, dataset_with_run, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    judge = _judge(project, owner, listener.url)
    JudgeConnection.objects.filter(pk=judge.pk).update(
        api_key_env="OPENAI_API_KEY", api_key_url=judge.base_url
    )
    judge.refresh_from_db()
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok and "only to api.openai.com" in outcome.message
    result = dataset_with_run(judge)
    assert _dispatch(result).status == Result.Status.ERROR
    assert "only to api.openai.com" in result.error and KEY not in result.error
    assert listener.requests == [] and not listener.seen(KEY)


def test_a_key_bound_to_one_port_never_reaches_another_port(
    project, owner, listener, other_listener, dataset_with_run, monkeypatch, settings
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    settings.JUDGE_KEY_ENV_ALLOWED = [
        f"OPENAI_API_KEY@http://127.0.0.1:{listener.port}"
    ]
    with pytest.raises(ApplicationError) as raised:
        _judge(project, owner, other_listener.url, api_key_env="OPENAI_API_KEY")
    assert (
        f"127.0.0.1:{other_listener.port}" in raised.value.field_errors["api_key_env"]
    )
    judge = _judge(project, owner, listener.url, api_key_env="OPENAI_API_KEY")
    # Moved to the other port with the key given again: refused, nothing saved.
    with pytest.raises(ApplicationError) as raised:
        judge_services.judge_update(
            judge=judge,
            user=owner,
            base_url=other_listener.url,
            api_key_env="OPENAI_API_KEY",
        )
    assert "api_key_env" in raised.value.field_errors
    judge.refresh_from_db()
    assert judge.base_url == listener.url
    # A hand-written UPDATE that moves the URL *and* its binding: refused at use.
    JudgeConnection.objects.filter(pk=judge.pk).update(
        base_url=other_listener.url, api_key_url=other_listener.url
    )
    judge.refresh_from_db()
    assert not judge_services.judge_test(judge=judge).ok
    result = _dispatch(dataset_with_run(judge))
    assert (
        result.status == Result.Status.ERROR
        and "only to http://127.0.0.1" in result.error
    )
    assert other_listener.requests == [] and not other_listener.seen(KEY)
    # Back on its own port the key is sent.
    JudgeConnection.objects.filter(pk=judge.pk).update(
        base_url=listener.url, api_key_url=listener.url
    )
    judge.refresh_from_db()
    assert judge_services.judge_test(judge=judge).ok
    assert listener.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"


def test_the_connection_guard_checks_the_host_really_connected_to(
    project, owner, listener, monkeypatch, settings
):
    # Whatever the stored URL says, each connection of a client holding an env key is
    # checked against the variable's hosts (a URL parsed differently by the HTTP client
    # cannot carry the key elsewhere).
    settings.JUDGE_KEY_ENV_ALLOWED = [
        f"OPENAI_API_KEY@http://127.0.0.1:{listener.port}"
    ]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    judge = _judge(project, owner, listener.url, api_key_env="OPENAI_API_KEY")
    guard = judge_guard(judge)
    loopback = [ipaddress.ip_address("127.0.0.1")]
    guard("127.0.0.1", listener.port, loopback)
    with pytest.raises(EgressRefused, match="does not send OPENAI_API_KEY"):
        guard("127.0.0.1", listener.port + 1, loopback)
    with pytest.raises(EgressRefused):
        guard("evil.example", 443, [ipaddress.ip_address("93.184.216.34")])


def test_the_servers_openai_key_goes_to_api_openai_com(project, owner, monkeypatch):
    """No network: the request the Test button builds is caught by a transport stub."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # The default allows api.openai.com; its name need not resolve here.
    monkeypatch.setattr(judge_services, "judge_url_problem", lambda url: None)
    judge = _judge(
        project, owner, "https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
    )
    assert judge_services.judge_api_key(judge=judge) == KEY
    sent: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=COMPLETION)

    def stub_client(base_url, api_key, timeout, *, address_guard):
        # The guard the real client would ask admits api.openai.com:443 only.
        address_guard("api.openai.com", 443, [ipaddress.ip_address("162.159.140.245")])
        with pytest.raises(EgressRefused):
            address_guard("evil.example", 443, [ipaddress.ip_address("93.184.216.34")])
        return openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        )

    monkeypatch.setattr(judge_services, "make_client", stub_client)
    assert judge_services.judge_test(judge=judge).ok
    assert sent[0].url.host == "api.openai.com" and sent[0].url.port in (None, 443)
    assert sent[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("entries", "name", "host", "port", "allowed"),
    [
        (
            ["OPENAI_API_KEY@api.openai.com"],
            "OPENAI_API_KEY",
            "api.openai.com",
            443,
            True,
        ),
        (
            ["OPENAI_API_KEY@API.OpenAI.com"],
            "OPENAI_API_KEY",
            "api.OPENAI.com",
            443,
            True,
        ),
        (
            ["OPENAI_API_KEY@api.openai.com"],
            "OPENAI_API_KEY",
            "evil.example",
            443,
            False,
        ),
        (
            ["OPENAI_API_KEY@api.openai.com"],
            "OPENAI_API_KEY",
            "api.openai.com.evil.example",
            443,
            False,
        ),
        (
            ["OPENAI_API_KEY@api.openai.com"],
            "OPENAI_API_KEY_2",
            "api.openai.com",
            443,
            False,
        ),
        (
            ["OPENAI_API_KEY@vllm.internal:8000"],
            "OPENAI_API_KEY",
            "vllm.internal",
            8000,
            True,
        ),
        (
            ["OPENAI_API_KEY@vllm.internal:8000"],
            "OPENAI_API_KEY",
            "vllm.internal",
            8001,
            False,
        ),
        (["K@a.example", "K@b.example"], "K", "b.example", 443, True),
        (["K@[::1]:9000"], "K", "::1", 9000, True),
        (["K@http://[::1]:9000"], "K", "::1", 9000, False),  # asked for https
        # Prefix entries.
        (
            ["EVALSITE_JUDGE_KEY_*@llm.example"],
            "EVALSITE_JUDGE_KEY_X",
            "llm.example",
            443,
            True,
        ),
        (
            ["EVALSITE_JUDGE_KEY_*@llm.example"],
            "EVALSITE_JUDGE_KEY_X",
            "other.example",
            443,
            False,
        ),
        (["EVALSITE_JUDGE_KEY_*@llm.example"], "SECRET_KEY", "llm.example", 443, False),
        # Any host only when the operator writes @* ...
        (
            ["EVALSITE_JUDGE_KEY_*@*"],
            "EVALSITE_JUDGE_KEY_X",
            "anywhere.example",
            8080,
            True,
        ),
        # ... never from a bare (legacy) or malformed entry.
        (["OPENAI_API_KEY"], "OPENAI_API_KEY", "api.openai.com", 443, False),
        (
            ["EVALSITE_JUDGE_KEY_*"],
            "EVALSITE_JUDGE_KEY_X",
            "api.openai.com",
            443,
            False,
        ),
        (["*@*"], "SECRET_KEY", "api.openai.com", 443, False),
        (["A*B@*"], "AXB", "api.openai.com", 443, False),
        (["K@*.example"], "K", "a.example", 443, False),
    ],
)
def test_key_env_policy(settings, entries, name, host, port, allowed):
    settings.JUDGE_KEY_ENV_ALLOWED = entries
    assert judge_key_env_allowed(name, host, port) is allowed


def test_an_entry_without_a_port_means_https(settings):
    settings.JUDGE_KEY_ENV_ALLOWED = ["K@llm.example"]
    assert judge_key_env_problem("K", "https://llm.example/v1") is None
    assert judge_key_env_problem("K", "https://llm.example:443/v1") is None
    for url in ("https://llm.example:8443/v1", "http://llm.example/v1"):
        problem = judge_key_env_problem("K", url)
        assert problem and "only to llm.example (over HTTPS" in problem
        assert f"not to {url.split('/v1')[0]}" in problem or "llm.example:80" in problem
    # A port keeps HTTPS; cleartext only where the operator writes http://.
    settings.JUDGE_KEY_ENV_ALLOWED = ["K@llm.example:80"]
    assert judge_key_env_problem("K", "http://llm.example/v1") is not None
    assert judge_key_env_problem("K", "https://llm.example:80/v1") is None
    settings.JUDGE_KEY_ENV_ALLOWED = ["K@http://llm.example:80"]
    assert judge_key_env_problem("K", "http://llm.example/v1") is None
    assert judge_key_env_problem("K", "https://llm.example:80/v1") is not None
    settings.JUDGE_KEY_ENV_ALLOWED = ["K@http://llm.example"]
    assert judge_key_env_problem("K", "http://llm.example:80/v1") is None
    assert judge_key_env_problem("K", "http://llm.example:443/v1") is not None


def test_the_default_binding_refuses_http_on_port_443(settings):
    # The audit's leak: OPENAI_API_KEY@api.openai.com admitted
    # http://api.openai.com:443/v1, so the bearer token went out unencrypted.
    settings.JUDGE_KEY_ENV_ALLOWED = ["OPENAI_API_KEY@api.openai.com"]
    problem = judge_key_env_problem("OPENAI_API_KEY", "http://api.openai.com:443/v1")
    assert problem and "not to http://api.openai.com:443" in problem
    assert not judge_key_env_allowed("OPENAI_API_KEY", "api.openai.com", 443, "http")
    assert judge_key_env_allowed("OPENAI_API_KEY", "api.openai.com", 443, "https")
    assert judge_key_env_problem("OPENAI_API_KEY", "https://api.openai.com/v1") is None


def test_a_key_bound_to_https_never_reaches_a_plain_http_listener_on_its_port(
    project, owner, listener, dataset_with_run, monkeypatch, settings
):
    """The binding names the listener's host and port without http://, i.e. HTTPS:
    a plain HTTP URL on that very host and port is refused at save, at use and on the
    wire, and the listener never sees the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    settings.JUDGE_KEY_ENV_ALLOWED = [f"OPENAI_API_KEY@127.0.0.1:{listener.port}"]
    with pytest.raises(ApplicationError) as raised:
        _judge(project, owner, listener.url, api_key_env="OPENAI_API_KEY")
    assert (
        f"not to http://127.0.0.1:{listener.port}"
        in (raised.value.field_errors["api_key_env"])
    )
    judge = _judge(project, owner, listener.url)
    with pytest.raises(ApplicationError):
        judge_services.judge_update(
            judge=judge, user=owner, api_key_env="OPENAI_API_KEY"
        )
    # Stored behind the services' back: refused when the key is read ...
    JudgeConnection.objects.filter(pk=judge.pk).update(
        api_key_env="OPENAI_API_KEY", api_key_url=judge.base_url
    )
    judge.refresh_from_db()
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok and "over HTTPS" in outcome.message
    result = _dispatch(dataset_with_run(judge))
    assert result.status == Result.Status.ERROR
    # ... and by the client's own check of each request's scheme, before it is sent.
    client = judge_services.make_client(
        listener.url, KEY, 5, address_guard=judge_guard(judge)
    )
    with pytest.raises(openai.APIConnectionError) as failed:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert "does not send OPENAI_API_KEY to http://127.0.0.1" in str(
        refused_cause(failed.value)
    )
    assert listener.requests == [] and not listener.seen(KEY)

    # The dispatcher's asyncio client checks the same, before the request is sent.
    async def call() -> None:
        aclient = make_async_client(
            listener.url, KEY, 5, address_guard=judge_guard(judge)
        )
        async with aclient:
            await aclient.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )

    with pytest.raises(openai.APIConnectionError) as failed:
        asyncio.run(call())
    assert "does not send OPENAI_API_KEY to http://127.0.0.1" in str(
        refused_cause(failed.value)
    )
    assert listener.requests == [] and not listener.seen(KEY)


def test_a_legacy_bare_entry_allows_nothing_and_the_system_check_says_how_to_fix_it(
    project, owner, settings
):
    settings.JUDGE_KEY_ENV_ALLOWED = ["OPENAI_API_KEY", "EVALSITE_JUDGE_KEY_*"]
    with pytest.raises(ApplicationError) as raised:
        _judge(
            project, owner, "https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
        )
    assert "api_key_env" in raised.value.field_errors
    warnings = [m for m in run_checks() if m.id == "evals.W001"]
    assert len(warnings) == 2
    assert "'OPENAI_API_KEY' names no host, so it allows nothing" in warnings[0].msg
    assert "OPENAI_API_KEY@api.example.com" in warnings[0].msg
    assert "EVALSITE_JUDGE_KEY_*@*" in warnings[1].msg
    settings.JUDGE_KEY_ENV_ALLOWED = ["OPENAI_API_KEY@api.openai.com"]
    assert [m for m in run_checks() if m.id == "evals.W001"] == []


def test_api_refuses_the_openai_key_for_an_owners_host_without_showing_it(
    client, project, owner, listener, bearer, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    response = client.post(
        f"/api/projects/{project.pk}/judges",
        {
            "name": "x",
            "base_url": listener.url,
            "model": "m",
            "api_key_env": "OPENAI_API_KEY",
        },
        content_type="application/json",
        **bearer(owner),
    )
    assert response.status_code == 400
    assert "only to api.openai.com" in response.json()["detail"]
    assert KEY not in response.content.decode()
    assert not JudgeConnection.objects.filter(name="x").exists()


# ---------------------------------------------------------------- 2. key and URL


def test_a_new_url_needs_the_key_again(project, owner, listener, other_listener):
    judge = _judge(project, owner, listener.url, api_key=KEY)
    with pytest.raises(ApplicationError) as raised:
        judge_services.judge_update(
            judge=judge, user=owner, base_url=other_listener.url
        )
    assert "api_key" in raised.value.field_errors
    judge.refresh_from_db()
    assert judge.base_url == listener.url and judge.has_api_key
    # With the key entered again (or removed), the change is saved.
    judge_services.judge_update(
        judge=judge, user=owner, base_url=other_listener.url, api_key="sk-other"
    )
    assert judge_services.judge_test(judge=judge).ok
    assert other_listener.requests[0]["headers"]["authorization"] == "Bearer sk-other"
    assert not other_listener.seen(KEY)


def test_a_url_changed_behind_the_services_back_never_gets_the_key(
    project, owner, listener, other_listener
):
    # The admin or a hand-written UPDATE moves the URL; the key stays bound to the old one.
    judge = _judge(project, owner, listener.url, api_key=KEY)
    JudgeConnection.objects.filter(pk=judge.pk).update(base_url=other_listener.url)
    judge.refresh_from_db()
    outcome = judge_services.judge_test(judge=judge)
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
        outcome = judge_services.judge_test(judge=judge)
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
        open_msg = judge_services.judge_test(judge=open_judge).message
        closed_msg = judge_services.judge_test(judge=closed_judge).message
    assert open_msg.replace(str(listener.port), "P") == closed_msg.replace(
        str(closed_port), "P"
    )
    assert listener.requests == []


def test_a_redirect_is_never_followed(project, owner, listener, other_listener):
    listener.reply = (307, {"Location": f"{other_listener.url}/chat/completions"}, b"")
    judge = _judge(project, owner, listener.url, api_key=KEY)
    outcome = judge_services.judge_test(judge=judge)
    assert not outcome.ok
    assert "HTTP 307" in outcome.message and "redirect" in outcome.message
    assert other_listener.requests == []


def test_an_allowed_private_host_is_allowed_on_that_port_only(project, owner, listener):
    with override_settings(
        DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{listener.port}"]
    ):
        assert judge_services.judge_test(judge=_judge(project, owner, listener.url)).ok
        with pytest.raises(ApplicationError):
            _judge(project, owner, f"http://127.0.0.1:{listener.port + 1}/v1", name="b")


def test_loopback_is_allowed_in_debug_for_make_runs_offline_judge(
    project, owner, listener
):
    with override_settings(DEBUG=True, JUDGE_ALLOWED_PRIVATE_HOSTS=[]):
        assert judge_services.judge_test(judge=_judge(project, owner, listener.url)).ok


def test_the_configured_offline_judge_is_allowed_without_debug(
    project, owner, listener
):
    with override_settings(
        DEBUG=False, JUDGE_ALLOWED_PRIVATE_HOSTS=[], OFFLINE_JUDGE_URL=listener.url
    ):
        assert judge_services.judge_test(judge=_judge(project, owner, listener.url)).ok


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
    outcome = judge_services.judge_test(
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

    monkeypatch.setattr("evalsite.evals.judges.services.make_client", broken)
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

    monkeypatch.setattr("evalsite.evals.judges.services.judge_create", broken)
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
        assert _dispatch(result).status == Result.Status.ERROR
        judge_services.judge_test(judge=judge)
    assert listener.seen(KEY)  # the key did go where it was entered for
    assert KEY not in caplog.text
    result.refresh_from_db()
    assert KEY not in result.error


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def dataset_with_run(project, owner):
    def _make(judge: JudgeConnection) -> Result:
        scorer = scorer_services.scorer_create(
            project=project,
            user=owner,
            name=f"F{judge.pk}",
            kind="faithfulness",
            judge=judge,
        )
        run = run_services.run_start(
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
    offline = judge_services.judge_create_offline(project)
    with pytest.raises(ApplicationError) as raised:
        judge_services.judge_update(judge=offline, user=owner, base_url=listener.url)
    assert "base_url" in raised.value.field_errors
    offline.refresh_from_db()
    assert offline.base_url != listener.url
    judge_services.judge_update(
        judge=offline, user=owner, max_concurrency=4
    )  # the rest may change


# The dispatcher (many results per worker slot, asyncio client), which judges every
# run: the guard on each connection, no redirects, key rules at use.


def _dispatch(result: Result) -> Result:
    run_dispatch(run_id=result.run_id)
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
