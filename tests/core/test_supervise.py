"""`manage.py supervise`, the restart loop round each Procfile.dev process: a killed
process comes back and the log says so; SIGTERM stops it and its child."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"supervise\[judge\]: started \S+ \(pid (\d+)\)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _supervise(log: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "supervise",
            "--name",
            "judge",
            "--delay",
            "0.2",
            "--",
            sys.executable,
            "-m",
            "scoring.offline_judge",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def test_supervise_restarts_a_killed_judge_and_stops_on_sigterm(tmp_path):
    log = tmp_path / "supervise.log"
    port = _free_port()
    supervisor = _supervise(log, port)
    try:
        first = int(_wait_for(lambda: STARTED.findall(log.read_text()))[0])
        _wait_for(lambda: _listening(port))

        os.kill(first, signal.SIGKILL)

        pids = _wait_for(lambda: [int(p) for p in STARTED.findall(log.read_text())][1:])
        second = pids[0]
        assert second != first
        text = log.read_text()
        assert re.search(
            r"supervise\[judge\]: was killed by SIGKILL after [\d.]+ s; "
            r"restarting in 0.2 s \(restart 1\)",
            text,
        ), text
        _wait_for(lambda: _listening(port))
        assert supervisor.poll() is None

        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=20) == 0
        # The child was stopped and reaped, not left behind as an orphan.
        assert _gone(second)
        assert not _listening(port)
        assert log.read_text().rstrip().endswith("supervise[judge]: stopped")
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()


def test_supervise_needs_a_command():
    result = subprocess.run(
        [sys.executable, "manage.py", "supervise", "--name", "x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "Give the command to run after --." in result.stderr


@pytest.mark.parametrize("line", ["judge", "web", "worker", "beat"])
def test_every_procfile_process_runs_supervised(line):
    procfile = (ROOT / "Procfile.dev").read_text()
    command = re.search(rf"^{line}: (.*)$", procfile, re.MULTILINE).group(1)
    assert command.startswith(
        f".venv/bin/python manage.py supervise --name {line} -- "
    ), command


def test_supervise_nice_lowers_the_command_and_its_sessions_share(tmp_path):
    """Under autogroup scheduling a nice value weighs only within a session, so the
    worker's lower priority must also be its session's (as honcho starts it: a
    session of its own, no terminal)."""
    out = tmp_path / "child.txt"
    probe = (
        "import os, pathlib; "
        "group = pathlib.Path('/proc/self/autogroup'); "
        f"pathlib.Path({str(out)!r}).write_text("
        "f'{os.nice(0)}|' + (group.read_text() if group.exists() else 'none'))"
    )
    supervisor = subprocess.Popen(
        [sys.executable, "manage.py", "supervise", "--name", "w", "--nice", "7"]
        + ["--delay", "30", "--", sys.executable, "-c", probe],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        text = _wait_for(lambda: out.exists() and out.read_text())
        nice, group = text.split("|")
        assert nice == "7"
        if group != "none":
            assert group.strip().endswith("nice 7"), group
    finally:
        supervisor.send_signal(signal.SIGTERM)
        _, err = supervisor.communicate(timeout=20)
    assert b"supervise[w]: nice 7" in err


def test_supervise_refuses_a_nice_out_of_range():
    result = subprocess.run(
        [sys.executable, "manage.py", "supervise", "--nice", "25", "--", "true"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "--nice is from 0" in result.stderr
