from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from evalsite.accounts.services import api_token_create
from tests.exports.builders import build_world


@pytest.fixture
def world(project, owner, reviewer, viewer):
    return build_world(project, owner)


@pytest.fixture
def owner_headers(owner) -> dict[str, str]:
    _, raw = api_token_create(user=owner, name="api-tests")
    return {"Authorization": f"Bearer {raw}"}


@pytest.fixture
def api_schema(db):
    """The API's OpenAPI schema, served in-process by the WSGI app (schemathesis)."""
    # Like Django's test client: the WSGI handler must not close the test transaction's
    # connection at the end of each request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi(
            "/api/openapi.json", get_wsgi_application()
        )
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
