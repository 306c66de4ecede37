"""A judge's reply to a failed call is not shown to everyone.

The judge here is a real HTTP endpoint on 127.0.0.1 that answers an error whose body
echoes the request's headers (``Authorization: Bearer <key>``) and the key itself. After
a run, the key appears nowhere a member can look: the result API (viewer, reviewer and
owner), the item page and its judge calls, the run page, the explorer, the audit log
and the CSV/JSONL/Parquet exports; the result stores the status and a short reason, and
only owners see the judge's whole reply, with the key redacted.
"""

from __future__ import annotations

import importlib
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow.parquet as pq
import pytest
from django.test import override_settings

from evalsite.evals.engine.dispatch import run_dispatch
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import JudgeCall, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.conftest import login
from tests.evals.conftest import support_rows
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db

# Not shaped like any provider's key: only redaction by value can catch it in plain text.
KEY = "zz-TOP-SECRET-9f8e7d6c5b4a"


class EchoJudge:
    """Answers every POST with ``status`` and a body naming the request's headers, the
    way a debugging proxy or a misconfigured gateway does."""

    def __init__(self, status: int, shape: str) -> None:
        self.requests = 0
        echo = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                echo.requests += 1
                headers = dict(self.headers.items())
                if shape == "headers":
                    body = json.dumps({"headers": headers}).encode()
                elif shape == "message":
                    message = f"invalid api key {self.headers.get('Authorization')}"
                    body = json.dumps({"error": {"message": message}}).encode()
                else:
                    body = (
                        f"{self.headers.get('Authorization', '')[7:]} refused\n"
                        f"Authorization: {self.headers.get('Authorization')}\n"
                        f"api_key={KEY}\n"
                    ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _failed_result(project, owner, status: int, shape: str) -> Result:
    echo = EchoJudge(status, shape)
    try:
        judge = judge_services.judge_create(
            project=project,
            user=owner,
            name="Echo",
            base_url=echo.url,
            model="m",
            api_key=KEY,
        )
        scorer = scorer_services.scorer_create(
            project=project,
            user=owner,
            name="Faith",
            kind="faithfulness",
            judge=judge,
        )
        run = run_services.run_start(
            project=project,
            user=owner,
            dataset=DatasetFactory(
                project=project, name="support", rows=support_rows(1)
            ),
            scorers=[scorer],
            enqueue=False,
        )
        Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
        result = run.results.get()
        run_dispatch(run_id=run.pk)
        assert echo.requests >= 1  # the key went out, and came back in the body
    finally:
        echo.close()
    result.refresh_from_db()
    return result


def _content(response) -> bytes:
    assert response.status_code == 200, response.status_code
    return (
        b"".join(response.streaming_content) if response.streaming else response.content
    )


@pytest.mark.parametrize(
    ("status", "shape"),
    [(401, "message"), (500, "headers"), (400, "text")],
)
def test_a_judge_echoing_the_key_leaks_it_nowhere(
    client, project, owner, reviewer, viewer, bearer, status, shape
):
    with override_settings(DEBUG=False):
        result = _failed_result(project, owner, status, shape)
    pid, rid, run_id = project.pk, result.pk, result.run_id
    call = JudgeCall.objects.get(result=result)

    # Stored: the status and a short reason; the full reply only on the call, redacted.
    assert f"HTTP {status} from the judge" in result.error
    assert "\n" not in call.error and len(call.error) < 300
    for text in (result.error, call.error, call.error_body, call.raw_response):
        assert KEY not in text
    assert "[redacted]" in call.error_body

    seen: dict[str, bytes] = {}
    for user in (viewer, reviewer):
        headers = bearer(user)
        api = client.get(f"/api/results/{rid}", **headers)
        data = api.json()
        assert f"HTTP {status} from the judge" in data["error"]
        assert [c["error_body"] for c in data["calls"]] == [""]
        seen[f"api {user}"] = _content(api)
        login(client, user)
        seen[f"item {user}"] = _content(client.get(f"/projects/{pid}/results/{rid}/"))
        call_page = _content(
            client.get(f"/projects/{pid}/results/{rid}/calls/{call.pk}/")
        )
        assert b"[redacted]" not in call_page  # no body at all, only the reason
        seen[f"call {user}"] = call_page
    login(client, viewer)
    for name, url in {
        "run page": f"/projects/{pid}/runs/{run_id}/",
        "explorer": f"/projects/{pid}/runs/{run_id}/results/",
        "matrix": f"/projects/{pid}/runs/{run_id}/matrix/",
        "run audit": f"/projects/{pid}/runs/{run_id}/audit/",
        "result audit": f"/projects/{pid}/results/{rid}/audit/",
    }.items():
        seen[name] = _content(client.get(url))
    seen["run summary"] = _content(
        client.get(f"/projects/{pid}/runs/{run_id}/summary", HTTP_HX_REQUEST="true")
    )
    assert f"HTTP {status} from the judge".encode() in seen["run page"]
    headers = bearer(viewer)
    for fmt in ("csv", "jsonl"):
        seen[fmt] = _content(client.get(f"/api/runs/{run_id}/export.{fmt}", **headers))
    table = pq.read_table(
        io.BytesIO(
            _content(client.get(f"/api/runs/{run_id}/export.parquet", **headers))
        )
    )
    seen["parquet"] = json.dumps(table.to_pylist(), default=str).encode()
    assert f"HTTP {status} from the judge".encode() in seen["csv"]
    api_run = client.get(f"/api/runs/{run_id}", **headers)
    seen["run api"] = _content(api_run)

    # The owner sees the judge's whole reply, with the key redacted.
    owner_api = client.get(f"/api/results/{rid}", **bearer(owner)).json()
    assert "[redacted]" in owner_api["calls"][0]["error_body"]
    login(client, owner)
    owner_call = _content(client.get(f"/projects/{pid}/results/{rid}/calls/{call.pk}/"))
    assert b"[redacted]" in owner_call
    seen["owner api"] = json.dumps(owner_api).encode()
    seen["owner call"] = owner_call

    leaks = [name for name, body in seen.items() if KEY.encode() in body]
    assert leaks == []


def test_migration_redacts_errors_stored_before_the_fix(project, owner):
    from django.apps import apps

    migration = importlib.import_module(
        "evalsite.evals.migrations.0007_judgecall_error_body"
    )
    with override_settings(DEBUG=False):
        result = _failed_result(project, owner, 401, "message")
    leaked = (
        "HTTP 401: Error code: 401 - Authorization: Bearer sk-live-ABCDEFGH12345678"
    )
    Result.objects.filter(pk=result.pk).update(error=leaked)
    JudgeCall.objects.filter(result=result).update(error=leaked)
    ok = Result.objects.filter(pk=result.pk).values_list("error", flat=True).get()
    assert "ABCDEFGH" in ok  # the stored text as it was before the fix

    migration.redact_stored_errors(apps, None)

    for text in (
        Result.objects.get(pk=result.pk).error,
        JudgeCall.objects.get(result=result).error,
    ):
        assert "ABCDEFGH" not in text and "Bearer [redacted]" in text


@pytest.mark.django_db(transaction=True)
def test_the_dispatcher_stores_the_same_redacted_reason(project, owner):
    with override_settings(DEBUG=False):
        result = _failed_result(project, owner, 500, "text")
    call = JudgeCall.objects.get(result=result)
    assert result.status == Result.Status.ERROR
    assert "HTTP 500 from the judge: [redacted] refused" in result.error
    assert "[redacted]" in call.error_body and "api_key=[redacted]" in call.error_body
    for text in (result.error, call.error, call.error_body):
        assert KEY not in text
