"""`manage.py wait_http`: `make run` prints the address only once the server answers."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalsite.core.management.commands.wait_http import (
    http_answers,
    ready_lines,
    wait_for_http,
)

ROOT = Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HITS: list[str] = []


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        HITS.append(self.path)
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def _serve_later(port, delay):
    server = http.server.HTTPServer(("127.0.0.1", port), _Health)

    def run():
        time.sleep(delay)
        server.serve_forever(poll_interval=0.05)

    threading.Thread(target=run, daemon=True).start()
    return server


def test_wait_for_http_polls_until_the_server_answers():
    answers = iter([None, None, 200])
    polls, slept = [], []

    def probe(url):
        polls.append(url)
        return next(answers)

    status = wait_for_http(
        "http://x/healthz", timeout=60, probe=probe, sleep=slept.append
    )
    assert status == 200 and len(polls) == 3 and len(slept) == 2


def test_wait_for_http_gives_up_after_the_timeout():
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    status = wait_for_http(
        "http://x/",
        timeout=1.0,
        interval=0.25,
        probe=lambda url: None,
        clock=lambda: now[0],
        sleep=sleep,
    )
    assert status is None and now[0] == pytest.approx(1.0)


def test_http_answers_sees_a_refused_port_and_an_error_status():
    port = _free_port()
    assert http_answers(f"http://127.0.0.1:{port}/healthz", timeout=1) is None
    server = _serve_later(port, 0)
    try:
        assert http_answers(f"http://127.0.0.1:{port}/healthz", timeout=5) == 200
        assert http_answers(f"http://127.0.0.1:{port}/missing", timeout=5) == 404
    finally:
        server.shutdown()


def test_ready_lines_name_the_address_and_the_demo_login():
    lines = ready_lines("http://127.0.0.1:8000/", status=200)
    assert "  evalsite is ready on http://127.0.0.1:8000/" in lines
    assert "  demo login: user 'demo', password 'demo'" in lines
    assert not any("HTTP" in line for line in lines)
    assert any("HTTP 503" in line for line in ready_lines("http://h/", status=503))


def test_the_command_prints_the_address_only_after_the_server_answers():
    port = _free_port()
    server = _serve_later(port, 1.5)
    try:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "wait_http", "--port", str(port)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = proc.communicate(timeout=60)
    finally:
        server.shutdown()
    assert proc.returncode == 0, err
    assert f"evalsite is ready on http://127.0.0.1:{port}/" in out
    assert "/healthz" in HITS  # it asked the server, which started after it


def test_the_command_says_nothing_of_the_address_while_nothing_answers(refusing_port):
    port = refusing_port.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "wait_http",
            "--port",
            str(port),
            "--timeout",
            "0.5",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        warning = proc.stderr.readline()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"has not answered at http://127.0.0.1:{port}/healthz" in warning
    assert "ready on" not in out


def test_make_run_prints_the_address_from_the_ready_process_only():
    makefile = (ROOT / "Makefile").read_text()
    run_recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "http://127.0.0.1" not in run_recipe
    procfile = (ROOT / "Procfile.dev").read_text()
    ready = [line for line in procfile.splitlines() if line.startswith("ready:")]
    assert ready == [
        "ready: .venv/bin/python manage.py wait_http --port ${EVALSITE_PORT:-8000} --stay"
    ]


def test_wait_for_http_stops_when_asked():
    status = wait_for_http(
        "http://x/",
        timeout=60,
        probe=lambda url: None,
        sleep=lambda s: None,
        stopped=iter([False, False, True]).__next__,
    )
    assert status is None
