"""Command line: ``python -m scoring score --kind faithfulness --input cases.jsonl``.

Writes one JSON result per input line (in input order) to ``--output`` or stdout; a case
that cannot be scored becomes an ``{"error": ...}`` line instead of stopping the run. A
progress bar goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from tqdm import tqdm  # type: ignore[import-untyped]

from scoring.cache import InMemoryCache
from scoring.errors import CaseError, JudgeError, ScoringError
from scoring.judge import JudgeResult, judge_case, make_client
from scoring.options import validate_options
from scoring.registry import KINDS

DEFAULT_BASE_URL = "http://127.0.0.1:8011/v1"
DEFAULT_MODEL = "offline-judge"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scoring", description="evalsite scoring library"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser(
        "score", help="score a JSONL file of cases with one scorer kind"
    )
    score.add_argument("--kind", required=True, choices=sorted(KINDS))
    score.add_argument(
        "--input", required=True, help="JSONL file of cases ('-' for stdin)"
    )
    score.add_argument(
        "--output", default="-", help="JSONL results file (default: stdout)"
    )
    score.add_argument(
        "--options", default=None, help="scorer options as a JSON object"
    )
    score.add_argument(
        "--base-url",
        default=DEFAULT_BASE_URL,
        help=f"judge endpoint (default {DEFAULT_BASE_URL})",
    )
    score.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"judge model (default {DEFAULT_MODEL})"
    )
    score.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (default OPENAI_API_KEY; unset = no key)",
    )
    score.add_argument(
        "--concurrency", type=int, default=4, help="cases judged at once (default 4)"
    )
    score.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per HTTP request"
    )
    score.add_argument("--max-retries", type=int, default=4)
    score.add_argument("--max-field-chars", type=int, default=100_000)
    score.add_argument("--temperature", type=float, default=0.0)
    score.add_argument(
        "--with-prompts",
        action="store_true",
        help="include messages and raw replies of every step",
    )
    score.add_argument("--no-progress", action="store_true", help="no progress bar")
    sub.add_parser("kinds", help="list the scorer kinds as JSON lines")
    return parser


def _read_cases(handle: IO[str]) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, exc


def _error_line(number: int, case: Any, exc: BaseException) -> dict[str, Any]:
    data: dict[str, Any] = {
        "line": number,
        "error": str(exc),
        "error_type": type(exc).__name__,
    }
    if isinstance(case, dict) and "id" in case:
        data["id"] = case["id"]
    if isinstance(exc, CaseError):
        data["field"] = exc.field
    if isinstance(exc, JudgeError):
        data["raw"] = exc.raw
        data["steps"] = [s.to_dict() for s in exc.steps]
    return data


def _result_line(
    number: int, case: dict[str, Any], result: JudgeResult, with_prompts: bool
) -> dict[str, Any]:
    steps = []
    for record in result.steps:
        step = record.to_dict()
        if not with_prompts:
            step.pop("messages")
            step.pop("raw")
        steps.append(step)
    data: dict[str, Any] = {"line": number}
    if "id" in case:
        data["id"] = case["id"]
    data.update(
        kind=result.kind,
        score=result.score,
        passed=result.passed,
        reason=result.reason,
        analysis=result.analysis,
        steps=steps,
    )
    return data


def _score(args: argparse.Namespace) -> int:
    try:
        options = json.loads(args.options) if args.options else None
        if options is not None and not isinstance(options, dict):
            raise ValueError("--options must be a JSON object")
        options = validate_options(args.kind, options)
    except (ValueError, ScoringError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    spec = KINDS[args.kind]
    client = None
    if spec.needs_judge:
        client = make_client(
            args.base_url, os.environ.get(args.api_key_env), args.timeout
        )
    cache = InMemoryCache()

    def one(item: tuple[int, Any]) -> dict[str, Any]:
        number, case = item
        if isinstance(case, BaseException):
            return _error_line(
                number, None, ValueError(f"line {number} is not valid JSON: {case}")
            )
        if not isinstance(case, dict):
            return _error_line(
                number, case, ValueError(f"line {number} is not a JSON object")
            )
        try:
            result = judge_case(
                args.kind,
                case,
                options,
                client,
                model=args.model,
                temperature=args.temperature,
                cache=cache,
                max_retries=args.max_retries,
                max_field_chars=args.max_field_chars,
                base_url=args.base_url,
            )
        except ScoringError as exc:
            return _error_line(number, case, exc)
        return _result_line(number, case, result, args.with_prompts)

    try:
        items = _load(args.input)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.input}: {exc}", file=sys.stderr)
        return 2
    errors = 0
    with contextlib.ExitStack() as stack:
        sink: IO[str] = sys.stdout
        if args.output != "-":
            sink = stack.enter_context(open(args.output, "w", encoding="utf-8"))
        pool = stack.enter_context(
            ThreadPoolExecutor(max_workers=max(1, args.concurrency))
        )
        bar = stack.enter_context(
            tqdm(
                total=len(items),
                desc=args.kind,
                unit="case",
                file=sys.stderr,
                disable=args.no_progress,
            )
        )
        for line in pool.map(_tracked(one, bar), items):
            errors += "error" in line
            sink.write(json.dumps(line, ensure_ascii=False) + "\n")
            sink.flush()
    print(f"{len(items) - errors} scored, {errors} errors", file=sys.stderr)
    return 0


def _load(path: str) -> list[tuple[int, Any]]:
    if path == "-":
        return list(_read_cases(sys.stdin))
    with open(path, encoding="utf-8") as handle:
        return list(_read_cases(handle))


def _tracked(func: Any, bar: Any) -> Any:
    def wrapper(item: tuple[int, Any]) -> dict[str, Any]:
        try:
            return func(item)  # type: ignore[no-any-return]
        finally:
            bar.update(1)

    return wrapper


def _kinds() -> int:
    for spec in KINDS.values():
        print(
            json.dumps(
                {
                    "name": spec.name,
                    "label": spec.label,
                    "needs_judge": spec.needs_judge,
                    "required_fields": list(spec.required_fields),
                    "direction": spec.direction,
                    "steps": list(spec.steps),
                    "defaults": spec.defaults,
                }
            )
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "score":
        return _score(args)
    return _kinds()
