from __future__ import annotations

import pytest

from evalsite.accounts.services import api_token_create
from tests.exports.builders import build_world
from tests.security.listener import Listener


@pytest.fixture
def world(project, owner, reviewer, viewer):
    return build_world(project, owner)


@pytest.fixture
def bearer():
    def _bearer(user) -> dict[str, str]:
        _, raw = api_token_create(user=user, name="test")
        return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}

    return _bearer


@pytest.fixture
def listener():
    """A judge endpoint on 127.0.0.1 that records what it receives."""
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def other_listener():
    server = Listener()
    yield server
    server.close()
