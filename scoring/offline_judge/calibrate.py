"""Measure the offline judge on a dataset: mean score per (kind, case type).

``python -m scoring.offline_judge.calibrate path/to/data.jsonl [--kinds a,b] [--verbose]``

A development tool for tuning ``heuristics``: it starts the offline judge in-process,
runs ``judge_case`` for every LLM kind over every case of the jsonl (fields ``input``,
``output``, ``context``, ``reference`` and ``metadata.case_type``) through the real
``openai`` client, and prints the mean score, the pass rate and, for factuality, the
category counts for each (kind, case type). Cases a kind cannot judge are counted as
skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scoring.errors import CaseError
from scoring.judge import judge_case, make_client
from scoring.offline_judge.server import MODEL_NAME, start_server
from scoring.registry import LLM_KINDS


def load_cases(path: Path) -> list[dict[str, Any]]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            cases.append(json.loads(line))
    return cases


def case_type(case: dict[str, Any]) -> str:
    meta = case.get("metadata") or {}
    return str(meta.get("case_type") or "(none)")


def measure(
    cases: Sequence[dict[str, Any]], kinds: Sequence[str], *, verbose: bool = False
) -> dict[tuple[str, str], dict[str, Any]]:
    """{(kind, case_type): {"n", "mean", "pass_rate", "skipped", "categories"}}."""
    server = start_server(port=0)
    try:
        client = make_client(server.base_url)
        scores: dict[tuple[str, str], list[float]] = defaultdict(list)
        passed: dict[tuple[str, str], int] = Counter()
        skipped: dict[tuple[str, str], int] = Counter()
        categories: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        for kind in kinds:
            for index, case in enumerate(cases):
                key = (kind, case_type(case))
                fields: dict[str, Any] = {
                    name: case[name]
                    for name in ("input", "output", "context", "reference")
                    if name in case
                }
                try:
                    result = judge_case(
                        kind, fields, None, client, model=MODEL_NAME, max_retries=1
                    )
                except CaseError:
                    skipped[key] += 1
                    continue
                scores[key].append(result.score)
                passed[key] += int(result.passed)
                if kind == "factuality":
                    categories[key][str(result.analysis.get("category"))] += 1
                if verbose:
                    print(
                        f"{kind:18} {key[1]:18} #{index:<3} {result.score:5.2f} "
                        f"{result.reason[:150]}"
                    )
    finally:
        server.stop()
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for key in sorted(set(scores) | set(skipped)):
        values = scores.get(key, [])
        table[key] = {
            "n": len(values),
            "mean": sum(values) / len(values) if values else None,
            "pass_rate": passed[key] / len(values) if values else None,
            "skipped": skipped[key],
            "categories": dict(sorted(categories[key].items())),
        }
    return table


def format_table(table: dict[tuple[str, str], dict[str, Any]]) -> str:
    lines = [f"{'kind':18} {'case_type':18} {'n':>3} {'mean':>6} {'pass':>6}  extra"]
    for (kind, ctype), row in table.items():
        mean = "-" if row["mean"] is None else f"{row['mean']:.2f}"
        rate = "-" if row["pass_rate"] is None else f"{row['pass_rate']:.2f}"
        extra = []
        if row["categories"]:
            extra.append(" ".join(f"{c}:{n}" for c, n in row["categories"].items()))
        if row["skipped"]:
            extra.append(f"skipped {row['skipped']}")
        lines.append(
            f"{kind:18} {ctype:18} {row['n']:>3} {mean:>6} {rate:>6}  {'; '.join(extra)}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scoring.offline_judge.calibrate",
        description="Mean offline-judge score per (kind, case type) over a jsonl.",
    )
    parser.add_argument("path", type=Path)
    parser.add_argument(
        "--kinds", default=",".join(LLM_KINDS), help="comma-separated LLM kinds"
    )
    parser.add_argument("--verbose", action="store_true", help="print every case")
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in LLM_KINDS]
    if unknown:
        parser.error(f"not LLM kinds: {', '.join(unknown)}")
    table = measure(load_cases(args.path), kinds, verbose=args.verbose)
    print(format_table(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
