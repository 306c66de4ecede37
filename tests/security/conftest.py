from __future__ import annotations

import pytest

from evalsite.accounts.services import api_token_create
from tests.exports.builders import build_world


@pytest.fixture
def world(project, owner, reviewer, viewer):
    return build_world(project, owner)


@pytest.fixture
def bearer():
    def _bearer(user) -> dict[str, str]:
        _, raw = api_token_create(user=user, name="test")
        return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}

    return _bearer
