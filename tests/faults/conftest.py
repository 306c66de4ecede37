from __future__ import annotations

# The real-worker fixtures (start_worker, the real broker) live with the integration tests.
# So does their timeout (pyproject's 300 s is too short for a whole fault run).
from tests.integration.conftest import (  # noqa: F401
    _real_broker,
    pytest_collection_modifyitems,
    start_worker,
)
