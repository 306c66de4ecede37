"""/healthz: public, 200 only when the database, the broker and the cache answer."""

from __future__ import annotations

import socket
from unittest import mock

import pytest
from django.db import OperationalError, connections

from evalsite.celery import app

pytestmark = pytest.mark.django_db

SECRET = "s3cret-password"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _assert_no_secret(response) -> None:
    assert SECRET not in response.content.decode()


def test_healthz_answers_200_when_database_broker_and_cache_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "broker": "ok", "cache": "ok"},
    }
    assert "no-cache" in response["Cache-Control"]


def test_healthz_answers_head_and_refuses_post(client):
    assert client.head("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405


def test_healthz_answers_503_naming_the_database_when_it_is_down(client):
    with mock.patch.object(
        connections["default"],
        "ensure_connection",
        autospec=True,
        side_effect=OperationalError(f"postgres://evalsite:{SECRET}@db refused"),
    ):
        response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"] == {
        "database": "error: OperationalError",
        "broker": "ok",
        "cache": "ok",
    }
    _assert_no_secret(response)


@pytest.fixture
def broker_down():
    """Point the Celery app at a closed port (with a password in its URL)."""
    previous = app.conf.broker_url, app.conf.broker_transport_options
    app.conf.broker_url = f"redis://:{SECRET}@127.0.0.1:{_closed_port()}/0"
    app.conf.broker_transport_options = {}
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.broker_transport_options = previous


def test_healthz_answers_503_naming_the_broker_when_it_is_down(client, broker_down):
    response = client.get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"] == checks["cache"] == "ok"
    assert checks["broker"].startswith("error: ")
    _assert_no_secret(response)


def test_healthz_answers_503_naming_the_cache_when_it_is_down(client, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "evalsite.lib.cache.RedisCache",
            "LOCATION": f"redis://:{SECRET}@127.0.0.1:{_closed_port()}/0",
        }
    }
    response = client.get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"] == checks["broker"] == "ok"
    assert checks["cache"].startswith("error: ")
    _assert_no_secret(response)
