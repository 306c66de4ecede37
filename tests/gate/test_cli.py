"""evalsite-gate against a fake evalsite API (httpx.MockTransport): the three answers,
the table and summary, waiting, and every failure path with its own exit code."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from typing import Any

import httpx
import pytest

from evalsite_gate.cli import main

URL = "http://evalsite.test"
TOKEN = "evs_secret"


def _pair(name, delta, low, high, *, n=20, direction="higher"):
    return {
        "run_scorer_id": 1,
        "b_run_scorer_id": 2,
        "name": name,
        "kind": "content_similarity",
        "direction": direction,
        "n": n,
        "both_ok": n,
        "regressions": 0,
        "improvements": 0,
        "unchanged": n,
        "pass_to_fail": 0,
        "fail_to_pass": 0,
        "missing": 0,
        "a_mean": 0.9,
        "b_mean": 0.9 + delta,
        "mean_delta": delta,
        "mean_delta_ci_low": low,
        "mean_delta_ci_high": high,
        "mean_delta_p": 0.2,
        "sign_test_p": None,
        "a_pass_rate": None,
        "b_pass_rate": None,
        "pass_rate_delta": None,
        "mcnemar_p": None,
    }


def _run(run_id, status="done", done=4, total=4, errors=0):
    return {
        "id": run_id,
        "project_id": 7,
        "status": status,
        "error": "judge down" if status == "failed" else "",
        "total": total,
        "progress": {"total": total, "done": done, "errors": errors},
    }


class FakeApi:
    """The four endpoints the gate calls, answering from tables the test fills."""

    def __init__(self) -> None:
        # run id → the states GET /api/runs/{id} answers in turn (the last one stays).
        self.runs: dict[int, list[dict[str, Any]]] = {
            10: [_run(10)],
            11: [_run(11)],
        }
        self.pairs = [_pair("quality", 0.0, -0.01, 0.01)]
        self.match = {"matched": 20, "only_in_a": 0, "only_in_b": 0}
        self.requests: list[httpx.Request] = []
        self.fail: dict[str, list[int]] = {}  # path → statuses to answer first
        self.next_id = 50

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        queued = self.fail.get(path)
        if queued:
            return httpx.Response(queued.pop(0), json={"detail": "down", "errors": []})
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return httpx.Response(401, json={"detail": "Authentication required"})
        parts = path.strip("/").split("/")
        if request.method == "POST" and parts[-1] == "runs":
            body = json.loads(request.content)
            if body["dataset_id"] == 404:
                return httpx.Response(
                    400,
                    json={
                        "detail": "Dataset 404 not found",
                        "errors": [{"field": "dataset_id", "message": "not found"}],
                    },
                )
            run_id = self.next_id
            self.runs[run_id] = [
                _run(run_id, "queued", done=0),
                _run(run_id, "running", done=2),
                _run(run_id, "done"),
            ]
            return httpx.Response(
                202, json={"id": run_id, "status": "queued", "total": 4, "url": ""}
            )
        if parts[:2] == ["api", "runs"] and len(parts) == 3:
            states = self.runs.get(int(parts[2]))
            if states is None:
                return httpx.Response(404, json={"detail": "Not found."})
            return httpx.Response(
                200, json=states.pop(0) if len(states) > 1 else states[0]
            )
        if parts[:2] == ["api", "runs"] and parts[3] == "compare":
            if int(parts[2]) not in self.runs or int(parts[4]) not in self.runs:
                return httpx.Response(404, json={"detail": "Not found."})
            return httpx.Response(
                200,
                json={
                    "run_a": int(parts[2]),
                    "run_b": int(parts[4]),
                    "pairs": self.pairs,
                    "candidates": [{"match": self.match, "pairs": self.pairs}],
                },
            )
        return httpx.Response(404, json={"detail": "Not found."})


@pytest.fixture
def api():
    return FakeApi()


def gate(api, *args, token=TOKEN, url=URL, transport="fake"):
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["--url", url, "--token", token, *args]
    code = main(
        argv,
        transport=httpx.MockTransport(api) if transport == "fake" else None,
        stdout=stdout,
        stderr=stderr,
        sleep=lambda s: None,
    )
    return code, stdout.getvalue(), stderr.getvalue()


def test_no_regression_exits_0_with_a_table_and_a_summary(api, tmp_path):
    summary = tmp_path / "gate.md"
    code, out, err = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05",
        "--summary", str(summary), "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    assert "quality" in out and "[-0.010, +0.010]" in out
    assert "PASS" in out
    text = summary.read_text()
    assert text.startswith("### evalsite gate: PASS")
    assert "| quality | ↑ | 20 |" in text
    assert f"{URL}/projects/7/compare/?a=10&b=11" in text
    compare = next(r for r in api.requests if "/compare/" in r.url.path)
    assert compare.url.path == "/api/runs/10/compare/11"
    assert compare.url.params["match"] == "key" and compare.url.params["key"] == "id"


def test_a_regression_beyond_the_margin_exits_1(api, tmp_path):
    api.pairs = [
        _pair("quality", 0.0, -0.01, 0.01),
        _pair("faithfulness", -0.3, -0.4, -0.2),
    ]
    summary = tmp_path / "gate.md"
    code, out, _ = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05",
        "--summary", str(summary),
    )  # fmt: skip
    assert code == 1
    assert "FAIL" in out
    assert "| faithfulness | ↑ | 20 | 0.900 | 0.600 | -0.300 |" in summary.read_text()
    assert "**regression**" in summary.read_text()


def test_an_interval_straddling_the_margin_exits_2(api):
    api.pairs = [_pair("quality", -0.05, -0.3, 0.2)]
    code, out, _ = gate(api, "--run", "11", "--baseline", "10", "--margin", "0.05")
    assert code == 2
    assert "NOT ENOUGH EVIDENCE" in out
    assert "straddles" in out


def test_only_gates_on_the_named_scorers(api):
    api.pairs = [
        _pair("quality", 0.0, -0.01, 0.01),
        _pair("faithfulness", -0.3, -0.4, -0.2),
    ]
    code, out, _ = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05", "--only", "quality"
    )
    assert code == 0
    assert "faithfulness" not in out


def test_it_starts_a_run_waits_with_a_progress_bar_and_gates_it(api):
    code, out, err = gate(
        api, "--project", "7", "--dataset", "3", "--scorer", "40", "--scorer", "41",
        "--name", "ci 1a2b", "--baseline", "10", "--margin", "0.05",
    )  # fmt: skip
    assert code == 0, err
    post = next(r for r in api.requests if r.method == "POST")
    assert post.url.path == "/api/projects/7/runs"
    assert json.loads(post.content) == {
        "dataset_id": 3,
        "scorer_ids": [40, 41],
        "name": "ci 1a2b",
    }
    assert "started run 50" in err
    assert "run 50" in err and "4/4" in err  # the bar reached the end
    polls = [r for r in api.requests if r.url.path == "/api/runs/50"]
    assert len(polls) == 3  # queued, running, done
    assert "run 50 against baseline run 10" in out


def test_a_revoked_or_wrong_token_exits_4_with_a_clear_message(api, tmp_path):
    summary = tmp_path / "gate.md"
    code, out, err = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05",
        "--summary", str(summary), token="evs_revoked",
    )  # fmt: skip
    assert code == 4
    assert out == ""
    assert "refused the token (HTTP 401)" in err and "revoked" in err
    assert "could not decide (exit 4)" in summary.read_text()


def test_an_unreachable_server_exits_3_after_retrying(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, out, err = gate(
        None, "--run", "11", "--baseline", "10", "--margin", "0.05",
        "--retries", "1", url=f"http://127.0.0.1:{port}", transport=None,
    )  # fmt: skip
    assert code == 3
    assert f"Cannot reach http://127.0.0.1:{port}" in err and "ConnectError" in err


def test_a_503_while_waiting_is_retried(api):
    api.fail["/api/runs/11"] = [503, 502]
    code, _, err = gate(api, "--run", "11", "--baseline", "10", "--margin", "0.05")
    assert code == 0, err


def test_a_server_error_that_lasts_exits_3(api):
    api.fail["/api/runs/11"] = [503] * 5
    code, _, err = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05", "--retries", "2"
    )
    assert code == 3
    assert "failed (HTTP 503): down" in err


def test_starting_a_run_is_not_retried_after_a_server_error(api):
    api.fail["/api/projects/7/runs"] = [503, 503]
    code, _, err = gate(
        api, "--project", "7", "--dataset", "3", "--scorer", "40",
        "--baseline", "10", "--margin", "0.05",
    )  # fmt: skip
    assert code == 3
    assert len([r for r in api.requests if r.method == "POST"]) == 1


def test_a_refused_start_exits_5_naming_the_field(api):
    code, _, err = gate(
        api, "--project", "7", "--dataset", "404", "--scorer", "40",
        "--baseline", "10", "--margin", "0.05",
    )  # fmt: skip
    assert code == 5
    assert "HTTP 400" in err and "dataset_id: not found" in err


def test_an_unknown_baseline_exits_5(api):
    code, _, err = gate(api, "--run", "11", "--baseline", "99", "--margin", "0.05")
    assert code == 5
    assert "Not found: run 99" in err


def test_a_failed_run_exits_6(api):
    api.runs[11] = [_run(11, "failed")]
    code, _, err = gate(api, "--run", "11", "--baseline", "10", "--margin", "0.05")
    assert code == 6
    assert "candidate run 11 failed: judge down" in err


def test_a_run_that_outlasts_the_timeout_exits_6_and_says_how_to_resume(api):
    api.runs[11] = [_run(11, "running", done=1)]
    code, _, err = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05",
        "--timeout", "0.2", "--poll", "0.05",
    )  # fmt: skip
    assert code == 6
    assert "did not finish within 0.2 s" in err
    assert "--run 11" in err


def test_no_scorer_in_common_or_an_unknown_only_exits_5(api):
    code, _, err = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05", "--only", "nope"
    )
    assert code == 5
    assert "'nope'" in err and "'quality'" in err
    api.pairs = []
    code, _, err = gate(api, "--run", "11", "--baseline", "10", "--margin", "0.05")
    assert code == 5
    assert "no scorer in common" in err


def test_a_redirect_is_not_followed(api):
    def redirect(request):
        return httpx.Response(302, headers={"location": "https://sso.example/login"})

    code, _, err = gate(redirect, "--run", "11", "--baseline", "10", "--margin", "0")
    assert code == 3
    assert "HTTP 302 to https://sso.example/login" in err


def test_a_page_that_is_not_the_api_exits_3(api):
    def html(request):
        return httpx.Response(200, text="<html>hello</html>")

    code, _, err = gate(html, "--run", "11", "--baseline", "10", "--margin", "0")
    assert code == 3
    assert "did not answer" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "10", "--margin", "0.1"], "pass --run ID"),
        (
            ["--run", "1", "--dataset", "2", "--baseline", "10", "--margin", "0.1"],
            "--run takes",
        ),
        (["--run", "1", "--baseline", "10", "--margin", "-1"], "--margin must be"),
        (["--run", "1", "--baseline", "10"], "--margin"),
    ],
)
def test_a_wrong_command_line_exits_64_not_2(api, args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        gate(api, *args)
    assert exc.value.code == 64
    assert message in capsys.readouterr().err


def test_no_token_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("EVALSITE_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["--url", URL, "--run", "1", "--baseline", "2", "--margin", "0"])
    assert exc.value.code == 64
    assert "EVALSITE_TOKEN" in capsys.readouterr().err


def test_the_client_runs_without_django():
    # `python -m evalsite_gate` imports nothing of the server (no settings needed).
    script = (
        "import sys, evalsite_gate.cli; "
        "assert not any(m.split('.')[0] in ('django', 'evalsite', 'celery') "
        "for m in sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={"PATH": ""})
    done = subprocess.run(
        [sys.executable, "-m", "evalsite_gate", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "exit codes:" in done.stdout


def test_an_interrupt_exits_130_and_says_the_run_goes_on(api, tmp_path):
    def interrupted(request):
        if request.url.path == "/api/runs/50":
            raise KeyboardInterrupt
        return api(request)

    summary = tmp_path / "gate.md"
    code, _, err = gate(
        interrupted, "--project", "7", "--dataset", "3", "--scorer", "40",
        "--baseline", "10", "--margin", "0.05", "--summary", str(summary),
    )  # fmt: skip
    assert code == 130
    assert "started run 50" in err and "goes on on the server" in err
    assert "could not decide (exit 130)" in summary.read_text()


def test_a_baseline_still_running_at_the_timeout_is_named_as_such(api):
    api.runs[10] = [_run(10, "running", done=1)]
    code, _, err = gate(
        api, "--run", "11", "--baseline", "10", "--margin", "0.05",
        "--timeout", "0.2", "--poll", "0.05",
    )  # fmt: skip
    assert code == 6
    assert "The baseline run 10 did not finish" in err
    assert "--run" not in err
