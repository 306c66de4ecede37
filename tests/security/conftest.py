from __future__ import annotations

import pytest

from tests.exports.builders import build_world
from tests.webhooks.builders import build_webhooks


@pytest.fixture
def world(project, owner, reviewer, viewer):
    return build_world(project, owner) | build_webhooks(project)
