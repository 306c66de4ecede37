"""``evalsite-gate``: start or take a run, wait for it, compare it with a baseline, exit 0/1/2.

    export EVALSITE_URL=https://evalsite.example.com EVALSITE_TOKEN=evs_...
    evalsite-gate --project 3 --dataset 12 --scorer 40 --scorer 41 \\
        --baseline 118 --margin 0.02 --summary gate.md
    evalsite-gate --run 131 --baseline 118 --margin 0.02
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import httpx
from tqdm import tqdm  # type: ignore[import-untyped]

from evalsite_gate.client import FINISHED, ApiClient
from evalsite_gate.decision import ScorerResult, gate_exit_code, judge_pair
from evalsite_gate.errors import (
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    EXIT_RUN_NOT_DONE,
    EXIT_USAGE,
    GateError,
)
from evalsite_gate.report import GateReport, error_markdown, markdown, text_table

EPILOG = """exit codes:
  0   no regression beyond the margin on any scorer
  1   a regression beyond the margin (the whole 95 % paired interval below -margin)
  2   not enough evidence: an interval straddles -margin (or too few matched items)
  3   the server could not be reached, failed (5xx) or is not evalsite's API
  4   the token was refused (missing, wrong or revoked) or may not do this
  5   the API refused the request (a run, project or scorer not found; bad input)
  6   the run failed, was cancelled or did not finish within --timeout
  64  a wrong command line
  130 interrupted (the run goes on on the server)
"""


class _Parser(argparse.ArgumentParser):
    # argparse exits 2 on a bad command line: here 2 is an answer of the gate.
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="evalsite-gate",
        description="A regression gate for CI: compare a run with a baseline run on "
        "matched items (compare's paired t-interval) and exit 0 (pass), 1 (regression "
        "beyond the margin) or 2 (not enough evidence).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    server = parser.add_argument_group("server")
    server.add_argument(
        "--url",
        default=os.environ.get("EVALSITE_URL", ""),
        help="the server's base URL (default: $EVALSITE_URL)",
    )
    server.add_argument(
        "--token",
        default=os.environ.get("EVALSITE_TOKEN", ""),
        help="an API token (default: $EVALSITE_TOKEN; prefer the variable, a "
        "command line is visible to other processes)",
    )
    run = parser.add_argument_group(
        "the run to gate: --run, or --project, --dataset and --scorer to start one"
    )
    run.add_argument("--run", type=int, metavar="ID", help="a run already started")
    run.add_argument("--project", type=int, metavar="ID")
    run.add_argument("--dataset", type=int, metavar="ID")
    run.add_argument(
        "--scorer",
        type=int,
        action="append",
        default=[],
        metavar="ID",
        help="a scorer config id (repeat for several)",
    )
    run.add_argument("--name", default="", help="the new run's name")
    gate = parser.add_argument_group("the gate")
    gate.add_argument(
        "--baseline", type=int, required=True, metavar="ID", help="the baseline run"
    )
    gate.add_argument(
        "--margin",
        type=float,
        required=True,
        help="the largest drop of a scorer's mean (score units, >= 0) accepted",
    )
    gate.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="gate on this scorer (by name) only; repeat for several (default: all "
        "scorers both runs have)",
    )
    gate.add_argument(
        "--match",
        choices=("key", "input"),
        default="key",
        help="how items of two datasets match (compare's; default key)",
    )
    gate.add_argument(
        "--key", default="id", help="the metadata key items match on (default id)"
    )
    out = parser.add_argument_group("waiting and output")
    out.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="give up waiting for a run after this long (default 3600)",
    )
    out.add_argument(
        "--poll", type=float, default=2.0, metavar="SECONDS", help="default 2"
    )
    out.add_argument(
        "--retries",
        type=int,
        default=3,
        help="retries of a lost connection or a 502/503/504 (default 3)",
    )
    out.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="write a Markdown summary here (also when the gate cannot decide)",
    )
    out.add_argument(
        "--no-progress", action="store_true", help="no progress bar on stderr"
    )
    return parser


def _check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not args.url:
        parser.error("no server: pass --url or set EVALSITE_URL")
    if not args.url.startswith(("http://", "https://")):
        parser.error(f"--url must start with http:// or https://, not {args.url!r}")
    if not args.token:
        parser.error("no token: set EVALSITE_TOKEN (or pass --token)")
    starting = args.project is not None or args.dataset is not None or args.scorer
    if args.run is not None and starting:
        parser.error(
            "--run takes a run already started: leave out --project, "
            "--dataset and --scorer"
        )
    if args.run is None and not (
        args.project is not None and args.dataset is not None and args.scorer
    ):
        parser.error("pass --run ID, or --project, --dataset and --scorer to start one")
    if args.margin < 0:
        parser.error("--margin must be 0 or more")
    if args.timeout <= 0 or args.poll <= 0:
        parser.error("--timeout and --poll must be more than 0")


def wait_for_run(
    client: ApiClient,
    run_id: int,
    *,
    timeout: float,
    poll: float,
    progress: bool,
    stream: TextIO,
    role: str = "candidate",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Poll the run until it finishes, with a progress bar; the finished run's detail."""
    deadline = clock() + timeout
    run = client.run(run_id)
    figures = run.get("progress") or {}
    total = int(figures.get("total") or run.get("total") or 0)
    interactive = stream.isatty()
    bar = tqdm(
        total=total,
        # Results done before the gate looked are not part of its rate.
        initial=int(figures.get("done") or 0),
        desc=f"run {run_id}",
        unit="result",
        file=stream,
        disable=not progress,
        # In a CI log every redraw is a line: one every 10 s is enough there.
        mininterval=0.2 if interactive else 10.0,
        dynamic_ncols=interactive,
    )
    try:
        while True:
            figures = run.get("progress") or {}
            done = int(figures.get("done") or 0)
            bar.update(max(0, done - bar.n))
            bar.set_postfix_str(
                f"{run.get('status')}, {int(figures.get('errors') or 0)} errors",
                refresh=False,
            )
            if run.get("status") in FINISHED:
                return run
            if clock() >= deadline:
                again = f"with --run {run_id} " if role == "candidate" else ""
                raise GateError(
                    f"The {role} run {run_id} did not finish within {timeout:g} s "
                    f"({done}/{total} results, {run.get('status')}). It goes on on "
                    f"the server: run the gate again {again}"
                    "to keep waiting.",
                    EXIT_RUN_NOT_DONE,
                )
            sleep(poll)
            run = client.run(run_id)
    finally:
        bar.close()


def _require_finished_well(run: dict[str, Any], role: str) -> None:
    status = run.get("status")
    if status in {"failed", "cancelled"}:
        error = f": {run.get('error')}" if run.get("error") else ""
        raise GateError(
            f"The {role} run {run.get('id')} {status}{error}; there is nothing to gate "
            "on. Retry its failed results or start another run.",
            EXIT_RUN_NOT_DONE,
        )


def _select(
    pairs: list[dict[str, Any]], only: Sequence[str], run_id: int, baseline_id: int
) -> list[dict[str, Any]]:
    if not pairs:
        raise GateError(
            f"Runs {run_id} and {baseline_id} have no scorer in common (same kind "
            "and name): there is nothing to compare.",
            EXIT_REFUSED,
        )
    if not only:
        return pairs
    names = {p.get("name") for p in pairs}
    unknown = [name for name in only if name not in names]
    if unknown:
        raise GateError(
            f"No scorer named {', '.join(map(repr, unknown))} in both runs; they "
            f"share {', '.join(sorted(map(repr, names)))}.",
            EXIT_REFUSED,
        )
    return [p for p in pairs if p.get("name") in only]


def gate(
    client: ApiClient,
    args: argparse.Namespace,
    *,
    stderr: TextIO,
    sleep: Callable[[float], None] = time.sleep,
) -> GateReport:
    """Start or take the run, wait for both runs, compare, decide."""
    if args.run is None:
        started = client.run_start(
            project_id=args.project,
            dataset_id=args.dataset,
            scorer_ids=args.scorer,
            name=args.name,
        )
        run_id = int(started["id"])
        # First, so that whatever happens next the run is not lost: --run takes it.
        print(f"started run {run_id} ({started.get('total')} results)", file=stderr)
    else:
        run_id = args.run
    waiting = {"timeout": args.timeout, "poll": args.poll, "sleep": sleep}
    baseline = wait_for_run(
        client, args.baseline, progress=False, stream=stderr, role="baseline", **waiting
    )
    _require_finished_well(baseline, "baseline")
    run = wait_for_run(
        client, run_id, progress=not args.no_progress, stream=stderr, **waiting
    )
    _require_finished_well(run, "candidate")
    comparison = client.compare(
        baseline_id=args.baseline, run_id=run_id, match=args.match, key=args.key
    )
    pairs = _select(
        list(comparison.get("pairs") or []), args.only, run_id, args.baseline
    )
    results: list[ScorerResult] = [judge_pair(p, margin=args.margin) for p in pairs]
    candidates = comparison.get("candidates") or [{}]
    notes = []
    for role, r in (("baseline", baseline), ("candidate", run)):
        if r.get("status") == "done_with_errors":
            errors = int((r.get("progress") or {}).get("errors") or 0)
            notes.append(
                f"The {role} run {r.get('id')} finished with {errors} failed results; "
                "their items count as missing, not as scores."
            )
    return GateReport(
        url=client.base_url,
        project_id=int(run.get("project_id") or 0),
        run_id=run_id,
        baseline_id=args.baseline,
        margin=args.margin,
        exit_code=gate_exit_code(results),
        results=results,
        match=dict(candidates[0].get("match") or {}),
        run_status=str(run.get("status", "")),
        notes=notes,
    )


def _write_summary(path: Path | None, text: str, stderr: TextIO) -> None:
    if path is None:
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"evalsite-gate: cannot write the summary to {path}: {exc}", file=stderr)


def main(
    argv: Sequence[str] | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    client = ApiClient(
        args.url, args.token, retries=args.retries, transport=transport, sleep=sleep
    )
    try:
        with client:
            report = gate(client, args, stderr=stderr, sleep=sleep)
    except GateError as exc:
        print(f"evalsite-gate: {exc.message}", file=stderr)
        _write_summary(args.summary, error_markdown(exc.message, exc.exit_code), stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        message = (
            "interrupted; a run the gate started goes on on the server (its id is "
            "in the 'started run' line): --run takes it"
        )
        print(f"evalsite-gate: {message}", file=stderr)
        _write_summary(args.summary, error_markdown(message, EXIT_INTERRUPTED), stderr)
        return EXIT_INTERRUPTED
    stdout.write(text_table(report))
    _write_summary(args.summary, markdown(report), stderr)
    return report.exit_code
