"""evalsite-gate, the installed console script, against a live server and a real worker:
a pass (0), a regression (1), not enough evidence (2), an unreachable server (3) and a
revoked token (4), each with its table or message and its Markdown summary."""

from __future__ import annotations

import csv
import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from evalsite.accounts.services import api_token_create, api_token_revoke
from tests.factories import UserFactory
from tests.integration.conftest import _real_broker, start_worker  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

GATE = Path(sys.executable).with_name("evalsite-gate")
ANSWERS = [
    f"The answer to question {i} is {i * 7}, as the reference says."
    for i in range(1, 9)
]


def _csv(outputs: dict[int, str]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "input", "output", "reference"])
    for i, output in outputs.items():
        writer.writerow([i, f"Question {i}?", output, ANSWERS[i - 1]])
    return out.getvalue().encode()


def _ok(response: httpx.Response) -> dict:
    assert response.is_success, response.text
    return response.json()


def _gate(*args: str, url: str, token: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, EVALSITE_URL=url, EVALSITE_TOKEN=token)
    return subprocess.run(
        [str(GATE), *args, "--poll", "0.3", "--timeout", "180"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


def test_the_gate_against_a_live_server(live_server, start_worker, tmp_path):  # noqa: F811
    assert GATE.exists(), "pip install -e . installs the evalsite-gate script"
    start_worker(concurrency=2)
    token_row, token = api_token_create(user=UserFactory(username="ci"))
    url = live_server.url
    api = httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    project = _ok(api.post("/api/projects", json={"name": "gate"}))["id"]

    def upload(name: str, outputs: dict[int, str]) -> int:
        files = {"file": (f"{name}.csv", _csv(outputs), "text/csv")}
        created = api.post(
            f"/api/projects/{project}/datasets", data={"name": name}, files=files
        )
        return _ok(created)["id"]

    baseline_data = upload("v1", {i: ANSWERS[i - 1] for i in range(1, 9)})
    # The new model forgot everything: every answer unrelated to its reference.
    worse_data = upload("v2-worse", dict.fromkeys(range(1, 9), "No idea, sorry."))
    # Three of the eight items, one of them wrong: far too few to tell.
    noisy_data = upload("v2-few", {1: ANSWERS[0], 2: ANSWERS[1], 3: "No idea, sorry."})
    scorer = _ok(
        api.post(
            f"/api/projects/{project}/scorers",
            json={
                "name": "similarity",
                "kind": "content_similarity",
                "judge_id": None,
                "options": {},
            },
        )
    )["id"]

    def start(dataset: int) -> int:
        body = {"dataset_id": dataset, "scorer_ids": [scorer]}
        return _ok(api.post(f"/api/projects/{project}/runs", json=body))["id"]

    # The gate waits for the baseline too: it is still running when the first starts.
    baseline = str(start(baseline_data))
    starting = ["--project", str(project), "--scorer", str(scorer)]

    # 0: the same dataset again, started by the gate.
    summary = tmp_path / "pass.md"
    done = _gate(
        *starting, "--dataset", str(baseline_data), "--name", "ci same",
        "--baseline", baseline, "--margin", "0.05", "--summary", str(summary),
        url=url, token=token,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout and "similarity" in done.stdout
    assert "8 matched items" in done.stdout
    assert "started run" in done.stderr
    assert summary.read_text().startswith("### evalsite gate: PASS")

    # 1: every item worse, by far more than the margin.
    summary = tmp_path / "fail.md"
    done = _gate(
        *starting, "--dataset", str(worse_data), "--baseline", baseline,
        "--margin", "0.05", "--summary", str(summary), url=url, token=token,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL" in done.stdout and "regression" in done.stdout
    assert "**regression**" in summary.read_text()

    # 2: three matched items, one much worse: the interval straddles -margin. A run
    # already started, taken with --run.
    noisy_run = start(noisy_data)
    summary = tmp_path / "unsure.md"
    done = _gate(
        "--run", str(noisy_run), "--baseline", baseline, "--margin", "0.05",
        "--summary", str(summary), url=url, token=token,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "NOT ENOUGH EVIDENCE" in done.stdout
    assert "3 matched items (5 only in the baseline" in done.stdout
    assert "straddles" in summary.read_text()

    # 3: nothing listens there.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    done = _gate(
        "--run", str(noisy_run), "--baseline", baseline, "--margin", "0.05",
        "--retries", "0", url=closed, token=token,
    )  # fmt: skip
    assert done.returncode == 3
    assert f"Cannot reach {closed}" in done.stderr

    # 4: the token revoked between two CI jobs.
    api_token_revoke(token=token_row)
    summary = tmp_path / "revoked.md"
    done = _gate(
        "--run", str(noisy_run), "--baseline", baseline, "--margin", "0.05",
        "--summary", str(summary), url=url, token=token,
    )  # fmt: skip
    assert done.returncode == 4
    assert "refused the token (HTTP 401)" in done.stderr
    assert done.stdout == ""
    assert "could not decide (exit 4)" in summary.read_text()
