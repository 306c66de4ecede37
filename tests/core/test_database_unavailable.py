"""A database connection terminated under a request: 503 with Retry-After (or the GET
run again on a fresh connection), never a 500.

The backend of the test's own connection is terminated from a second connection with
pg_terminate_backend, as a failover or an operator would; Postgres only.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from django.test import Client

from tests.conftest import bearer
from tests.factories import DatasetFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="pg_terminate_backend is Postgres's"
    ),
]


def _terminate_own_backend() -> None:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        terminated = other.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()
    assert terminated == (True,)


@pytest.fixture
def web(owner) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    return client


def test_a_page_after_the_connection_was_terminated_is_a_503_then_works(web, project):
    dataset = DatasetFactory(project=project)
    url = f"/projects/{project.pk}/datasets/{dataset.pk}/"
    _terminate_own_backend()
    response = web.get(url)
    # The session is read by a middleware before any view: 503, not retried there.
    assert response.status_code == 503
    assert response["Retry-After"]
    assert b"database connection was lost" in response.content
    # The broken connection was closed; the next request opens a new one.
    assert web.get(url).status_code == 200


def test_a_post_after_the_connection_was_terminated_is_a_503_not_retried(web, project):
    _terminate_own_backend()
    response = web.post(f"/projects/{project.pk}/datasets/upload/", {})
    assert response.status_code == 503
    assert response["Retry-After"]


def test_an_api_get_whose_view_loses_the_connection_is_run_again(project, owner):
    headers = bearer(owner)  # before the termination: the token is written here
    api = Client(raise_request_exception=False)
    _terminate_own_backend()
    # Bearer auth runs inside the view: the GET is retried once on a new connection.
    response = api.get(f"/api/projects/{project.pk}/datasets", **headers)
    assert response.status_code == 200
    assert response.json()["count"] == 0


def test_an_api_post_whose_view_loses_the_connection_is_a_503_in_the_api_shape(
    project, owner
):
    headers = bearer(owner)
    api = Client(raise_request_exception=False)
    _terminate_own_backend()
    response = api.post(
        "/api/projects", {"name": "x"}, content_type="application/json", **headers
    )
    assert response.status_code == 503
    assert response["Retry-After"]
    body = response.json()
    assert "database connection was lost" in body["detail"] and body["errors"]
