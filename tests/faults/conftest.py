from __future__ import annotations

# The real-worker fixtures (start_worker, the real broker) live with the integration tests.
from tests.integration.conftest import _real_broker, start_worker  # noqa: F401
