"""examples/api_walkthrough.py against a live server, a real worker and the offline judge."""

from __future__ import annotations

import httpx
import pytest

from evalsite.accounts.services import api_token_create
from examples.api_walkthrough import walkthrough
from tests.api.test_walkthrough import _check_csv, offline_judge  # noqa: F401
from tests.factories import UserFactory
from tests.integration.conftest import _real_broker, start_worker  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_walkthrough_against_a_live_server_and_a_real_worker(
    tmp_path,
    offline_judge,  # noqa: F811
    live_server,
    start_worker,  # noqa: F811
):
    worker = start_worker(concurrency=2)
    user = UserFactory(username="alice")
    _, token = api_token_create(user=user)
    with httpx.Client(
        base_url=live_server.url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ) as client:
        path = walkthrough(
            client, out_dir=tmp_path, poll_seconds=0.3, timeout_seconds=120
        )
    assert "ready" in worker.log()
    _check_csv(path)
