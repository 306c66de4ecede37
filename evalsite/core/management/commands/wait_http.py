"""Print where evalsite is, once it answers: the `ready` line of Procfile.dev.

`make run` used to print the address before honcho had started the web server, so the
first click on it often met "connection refused". This polls the server's health URL
and prints the address and the demo login only when the server answers. Then it waits
quietly (honcho stops every process as soon as one ends) until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

# How long one poll may take, and the pause between polls.
REQUEST_TIMEOUT = 2.0
INTERVAL = 0.25


def http_answers(url: str, *, timeout: float = REQUEST_TIMEOUT) -> int | None:
    """The HTTP status `url` answers with, or None when nothing answers (refused,
    reset, timed out). An error status is an answer: the server is up."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a loopback URL from the Procfile
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return None


def wait_for_http(
    url: str,
    *,
    timeout: float,
    interval: float = INTERVAL,
    probe: Callable[[str], int | None] = http_answers,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
    stopped: Callable[[], bool] = lambda: False,
) -> int | None:
    """Poll `url` until it answers (its status), or `timeout` seconds pass or
    `stopped()` says to give up (None)."""
    deadline = clock() + timeout
    while not stopped():
        status = probe(url)
        if status is not None:
            return status
        if clock() >= deadline:
            return None
        sleep(interval)
    return None


def ready_lines(base_url: str, *, status: int) -> list[str]:
    """What `make run` prints once the server answers."""
    lines = [
        "",
        f"  evalsite is ready on {base_url}",
        "  demo login: user 'demo', password 'demo'",
        "  (Ctrl-C stops web, worker, beat and the offline judge)",
    ]
    if status != 200:
        lines.insert(
            2, f"  (its health check answered HTTP {status}: see the web log above)"
        )
    return [*lines, ""]


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # a poller: nothing to check, start at once
    help = (
        "Wait until URL answers, then print the address and the demo login; with "
        "--stay, keep running until stopped (for honcho)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--path", default="/healthz", help="Polled until it answers."
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=120.0,
            help="Seconds to wait before saying the server is slow (it keeps waiting).",
        )
        parser.add_argument(
            "--stay",
            action="store_true",
            help="Keep running once ready, until SIGINT/SIGTERM (honcho stops "
            "every process when one ends).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        base = f"http://{options['host']}:{options['port']}/"
        url = base.rstrip("/") + options["path"]
        # A flag, not a threading.Event: Event.set() from a signal handler deadlocks
        # when the signal lands while the main thread holds the Event's own lock
        # (inside wait()), and the command then ignored SIGTERM for good (once in CI).
        stopping: list[int] = []

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stopping.append(signum)

        def stopped() -> bool:
            return bool(stopping)

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, on_signal)
        status = None
        while status is None and not stopped():
            status = wait_for_http(
                url, timeout=options["timeout"], sleep=time.sleep, stopped=stopped
            )
            if status is None and not stopped():
                self.stderr.write(
                    f"evalsite has not answered at {url} after "
                    f"{options['timeout']:g} s; still waiting (see the web log)."
                )
        if status is not None:
            self.stdout.write("\n".join(ready_lines(base, status=status)))
            self.stdout.flush()
        if options["stay"]:
            while not stopped():
                time.sleep(INTERVAL)
