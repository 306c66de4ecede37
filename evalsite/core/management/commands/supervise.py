"""Run one command and restart it whenever it ends, saying so in the log.

`make run` starts web, worker, beat and the offline judge under honcho, which stops
every process as soon as one ends: a killed worker took the other three down with
it. Each Procfile.dev line runs under this command instead, so a crashed process comes
back on its own and only Ctrl-C (or SIGTERM) stops the lot.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

# A child that dies sooner than this after starting is crash-looping (a port in use, a
# bad setting): the delay before the next start doubles, up to RESTART_DELAY_MAX.
HEALTHY_AFTER = 10.0
RESTART_DELAY_MAX = 30.0
POLL = 0.1


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def _session_of_its_own() -> bool:
    """This process leads its session, or its parent does (honcho's `sh -c`), and no
    terminal is attached: then the session holds only this command's processes, and
    lowering its share lowers nothing else (from a terminal it would be the shell's
    session, with whatever else runs there)."""
    if os.getsid(0) not in (os.getpid(), os.getppid()):
        return False
    try:
        os.close(os.open("/dev/tty", os.O_RDONLY))
    except OSError:
        return True  # no controlling terminal
    return False


class Command(BaseCommand):
    help = (
        "Run COMMAND and restart it whenever it ends (logging why); SIGTERM or "
        "SIGINT stops it and exits. Usage: supervise --name web -- COMMAND [ARGS...]"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default="process", help="Shown in the log.")
        parser.add_argument(
            "--delay",
            type=float,
            default=1.0,
            help="Seconds before a restart (doubled while it keeps crashing).",
        )
        parser.add_argument(
            "--stop-timeout",
            type=float,
            default=10.0,
            help="Seconds a stopping child gets after SIGTERM before SIGKILL.",
        )
        parser.add_argument(
            "--nice",
            type=int,
            default=0,
            help="Run the command at this lower CPU priority (0-19; see below).",
        )
        parser.add_argument("child", nargs=argparse.REMAINDER)

    def handle(self, *args: Any, **options: Any) -> None:
        argv = list(options["child"])
        if argv[:1] == ["--"]:
            argv = argv[1:]
        if not argv:
            raise CommandError("Give the command to run after --.")
        if options["delay"] < 0 or options["stop_timeout"] < 0:
            raise CommandError("--delay and --stop-timeout are seconds, at least 0.")
        if not 0 <= options["nice"] <= 19:
            raise CommandError("--nice is from 0 (no change) to 19 (lowest priority).")
        if options["nice"]:
            self._lower_priority(options["name"], options["nice"])
        self._supervise(
            argv,
            name=options["name"],
            delay=options["delay"],
            stop_timeout=options["stop_timeout"],
        )

    def _lower_priority(self, name: str, nice: int) -> None:
        """`nice` for this process and the command, and for the session's autogroup
        when the session is ours alone (honcho and systemd start each process in a
        session of its own).

        With Linux's autogroup scheduling (on by default), the CPU is first shared
        evenly between sessions, and a nice value only weighs against processes of
        the same session: `nice -n 10 celery …` in its own session took as much CPU as
        gunicorn's five workers together, and in the load test the pages waited 6-7 s
        (p95) for a core while the run judged. The autogroup's own nice value is what
        weighs between sessions."""
        os.nice(nice)
        autogroup = "/proc/self/autogroup"
        if not _session_of_its_own() or not os.path.exists(autogroup):
            self._log(name, f"nice {nice}")
            return
        try:
            with open(autogroup, "w") as f:
                f.write(str(nice))
        except OSError as exc:
            self._log(name, f"nice {nice}; the session's share is unchanged: {exc}")
            return
        self._log(name, f"nice {nice}, and its session's share of the CPU")

    def _log(self, name: str, message: str) -> None:
        # stderr: line-buffered even through honcho's pipe, so lines show at once.
        self.stderr.write(f"supervise[{name}]: {message}")
        self.stderr.flush()

    def _supervise(
        self, argv: list[str], *, name: str, delay: float, stop_timeout: float
    ) -> None:
        """Steps: start the child; wait for it to end or for a stop signal; on a stop,
        pass the signal on once, give the child `stop_timeout` seconds, kill it if it is
        still there, and return; else log how it ended, wait the restart delay (a stop
        signal cuts it short) and start it again.

        The child stays in our process group, so honcho's SIGTERM (and its SIGKILL
        after a few seconds) reaches it directly as well: nothing is left behind."""
        stopping: list[int] = []
        child: subprocess.Popen[bytes] | None = None

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stopping.append(signum)  # acted on by the loops below within POLL

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        restarts = 0
        wait = delay
        while not stopping:
            started = time.monotonic()
            child = subprocess.Popen(argv)  # noqa: S603 - the Procfile's own command
            self._log(name, f"started {argv[0]} (pid {child.pid})")
            while child.poll() is None and not stopping:
                time.sleep(POLL)
            if stopping:
                break
            code = child.returncode
            ran = time.monotonic() - started
            if restarts and ran < HEALTHY_AFTER:
                wait = min(wait * 2, RESTART_DELAY_MAX)
            else:
                wait = delay
            restarts += 1
            self._log(
                name,
                f"{_exit_reason(code)} after {ran:.1f} s; restarting in {wait:g} s "
                f"(restart {restarts})",
            )
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and not stopping:
                time.sleep(POLL)
        if child is not None and child.poll() is None:
            child.send_signal(stopping[0] if stopping else signal.SIGTERM)
            try:
                child.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                self._log(name, f"still running after {stop_timeout:g} s: SIGKILL")
                child.kill()
                child.wait()
        self._log(name, "stopped")
