from __future__ import annotations

import pytest

from tests.exports.builders import build_world


@pytest.fixture
def world(project, owner, reviewer, viewer):
    return build_world(project, owner)
