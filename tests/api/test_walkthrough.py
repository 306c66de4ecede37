"""examples/api_walkthrough.py really works, in-process with eager Celery (the live
server + real worker variant is test_walkthrough_live.py)."""

from __future__ import annotations

import csv
import io

import httpx
import pytest
from django.core.wsgi import get_wsgi_application

from evalsite.accounts.services import api_token_create
from examples.api_walkthrough import walkthrough
from scoring.offline_judge import start_server
from tests.factories import UserFactory


@pytest.fixture
def offline_judge(settings):
    server = start_server(port=0)
    # New projects get their offline judge connection pointed here.
    settings.OFFLINE_JUDGE_URL = server.base_url
    yield server
    server.stop()


def _check_csv(path) -> None:
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert len(rows) == 4 * 3
    assert {r["scorer"] for r in rows} == {
        "Faithfulness",
        "Hallucination",
        "Similarity to reference",
    }
    assert {r["status"] for r in rows} == {"ok"}
    assert all(r["final_score"] != "" for r in rows)
    assert "metadata.topic" in rows[0]


@pytest.mark.django_db(transaction=True)
def test_walkthrough_in_process(tmp_path, offline_judge, capsys):
    user = UserFactory(username="alice")
    _, token = api_token_create(user=user)
    transport = httpx.WSGITransport(app=get_wsgi_application())
    with httpx.Client(
        transport=transport,
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        path = walkthrough(
            client, out_dir=tmp_path, poll_seconds=0.05, timeout_seconds=60
        )
    _check_csv(path)
    assert "wrote" in capsys.readouterr().out
