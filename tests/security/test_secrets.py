"""A judge API key (stored encrypted, or named by an env var) never leaves the server:
not in pages, API responses, exports, nor logs."""

from __future__ import annotations

import logging

import pytest

from tests.conftest import login
from tests.factories import JudgeConnectionFactory
from tests.security.routes import fill, operations, pages
from tests.webhooks.builders import WORLD_WEBHOOK_SECRET

pytestmark = pytest.mark.django_db

DB_KEY = "sk-world-SECRET-KEY-777"  # set by build_world on its judge
ENV_KEY = "sk-env-SECRET-KEY-888"
ENV_NAME = "EVALSITE_SECURITY_TEST_KEY"


def _bodies(responses) -> bytes:
    out = []
    for r in responses:
        out.append(b"".join(r.streaming_content) if r.streaming else r.content)
    return b"\n".join(out)


def test_judge_keys_never_appear_in_pages_api_exports_or_logs(
    client, world, owner, bearer, monkeypatch, caplog
):
    monkeypatch.setenv(ENV_NAME, ENV_KEY)
    env_judge = JudgeConnectionFactory(
        project=world["project"], name="env-judge", api_key_env=ENV_NAME
    )
    caplog.set_level(logging.DEBUG)
    responses = []
    login(client, owner)
    for page in pages():
        responses.append(client.get(fill(page.route, world)))
    for judge in (world["judge"], env_judge):
        responses.append(
            client.get(f"/projects/{world['project'].pk}/judges/{judge.pk}/")
        )
    headers = bearer(owner)
    for op in operations():
        if op.method == "GET":
            responses.append(client.get("/api" + fill(op.path, world), **headers))
    for judge in (world["judge"], env_judge):
        responses.append(client.get(f"/api/judges/{judge.pk}", **headers))
        # "Test connection" reaches a closed port: the error it reports must not echo the key.
        responses.append(client.post(f"/api/judges/{judge.pk}/test", **headers))
    body = _bodies(responses)
    assert body  # the walk produced output
    webhook_key = WORLD_WEBHOOK_SECRET.removeprefix("whsec_")
    for secret in (DB_KEY, ENV_KEY, webhook_key):
        assert secret.encode() not in body
        assert secret not in caplog.text
    # The env var's name is configuration, not a secret: owners see which one is used.
    assert ENV_NAME.encode() in body


def test_api_key_is_write_only_in_the_api(client, world, owner, bearer):
    response = client.get(f"/api/judges/{world['judge'].pk}", **bearer(owner))
    assert response.status_code == 200
    data = response.json()
    assert "api_key" not in data and "api_key_encrypted" not in data
    assert data.get("has_api_key") is True
