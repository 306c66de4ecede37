"""``python -m scoring.offline_judge --host 127.0.0.1 --port 8011``."""

from __future__ import annotations

import argparse
import sys
import time

from scoring.offline_judge.imperfect import KNOBS, Imperfection
from scoring.offline_judge.server import start_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scoring.offline_judge",
        description="OpenAI-compatible offline heuristic judge (no key, no network).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="how long every chat request takes (the answer is worked out within it)",
    )
    parser.add_argument(
        "--error-rate", type=float, default=0.0, help="share of 429/500 replies (mixed)"
    )
    parser.add_argument(
        "--malformed-rate", type=float, default=0.0, help="share of broken-JSON replies"
    )
    parser.add_argument(
        "--retry-after",
        type=float,
        default=0.1,
        help="Retry-After seconds sent with 429",
    )
    parser.add_argument("--seed", type=int, default=0)
    imperfect_help = {
        "yes_bias": "probability that a failing verdict becomes a pass",
        "noise": "probability that any verdict flips",
        "padding_sensitivity": "probability that a long (padded) answer passes",
        "instruction_sensitivity": "probability of obeying instructions to the judge in the answer",
        "authority_sensitivity": "probability that an authority cue in the answer makes it pass",
        "example_sensitivity": "share of the yes bias that few-shot examples in the prompt remove",
    }
    for knob, help_text in imperfect_help.items():
        parser.add_argument(
            f"--{knob.replace('_', '-')}", type=float, default=0.0, help=help_text
        )
    parser.add_argument(
        "--padding-min-chars",
        type=int,
        default=Imperfection().padding_min_chars,
        help="an answer at least this long counts as padded",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--enable-control",
        action="store_true",
        help="serve the /_control and /_reset test hooks (tests and benchmarks only: "
        "anyone who can reach the server could script its answers)",
    )
    args = parser.parse_args(argv)
    for name in ("error_rate", "malformed_rate"):
        if not 0 <= getattr(args, name) <= 1:
            parser.error(f"--{name.replace('_', '-')} must be between 0 and 1")
    try:
        imperfection = Imperfection(**{k: getattr(args, k) for k in KNOBS})
    except ValueError as exc:
        parser.error(str(exc))
    server = start_server(
        args.host,
        args.port,
        latency_ms=args.latency_ms,
        error_rate=args.error_rate,
        malformed_rate=args.malformed_rate,
        seed=args.seed,
        retry_after=args.retry_after,
        verbose=args.verbose,
        enable_control=args.enable_control,
        imperfection=imperfection,
    )
    print(
        f"offline judge listening on {server.base_url} (model 'offline-judge')",
        file=sys.stderr,
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
