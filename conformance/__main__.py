"""``python -m conformance``: the differential suite (``make conformance``).

Generates the cases, runs the released @mastra/evals 1.10.2 and promptfoo 0.123.1 on
them (conformance/node) and ``scoring`` on the same analyses, and compares the numbers.
Fails when a difference is not explained by a row of the "Where our numbers differ"
tables (docs/scoring/differences.md), when such a row is not reproduced by any case, or
when the documented rows and the suite's (conformance/rows.py) are not the same list.
The case count and the number of undocumented differences are printed last.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from conformance.cases import generate
from conformance.rows import ROWS, documented_row_ids, explain, same_number, shown
from conformance.run import run_cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every kind's case count"
    )
    parser.add_argument("--jobs", type=int, default=2, help="Node processes")
    parser.add_argument(
        "--report", type=Path, help="write every case's numbers here (JSON lines)"
    )
    parser.add_argument(
        "--show", type=int, default=5, help="undocumented differences printed per kind"
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=Path("var/conformance/reference.json"),
        help="where the reference side's results are saved",
    )
    parser.add_argument(
        "--reuse-reference",
        action="store_true",
        help="read the saved reference results when they are for the same cases "
        "(checking ours on another Python version)",
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    cases = generate(seed=args.seed, scale=args.scale)
    outcomes, meta, reused = run_cases(
        cases, jobs=args.jobs, reference=args.reference, reuse=args.reuse_reference
    )
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    print(
        f"reference: {versions}{' (saved results for these cases)' if reused else ''}; "
        f"ours on Python {platform.python_version()}"
    )

    identical: Counter[str] = Counter()
    documented: Counter[str] = Counter()
    reproduced: Counter[str] = Counter()
    undocumented: dict[str, list[str]] = defaultdict(list)
    report = args.report.open("w", encoding="utf-8") if args.report else None
    for outcome in outcomes:
        kind = outcome.case.kind
        for row_id in shown(outcome, meta):
            reproduced[row_id] += 1
        if same_number(outcome):
            identical[kind] += 1
            verdict = "identical"
        else:
            explanation = explain(outcome, meta)
            if explanation.rows:
                documented[kind] += 1
                for row_id in explanation.rows:
                    reproduced[row_id] += 1
                verdict = "documented: " + ", ".join(explanation.rows)
            else:
                verdict = "UNDOCUMENTED: " + explanation.note
                undocumented[kind].append(
                    f"  {outcome.case.id} rows={outcome.case.rows} ours={outcome.ours.score}"
                    f"{' (' + str(outcome.ours.error)[:160] + ')' if outcome.ours.error else ''}"
                    f" theirs={outcome.theirs.score}"
                    f"{' (' + str(outcome.theirs.error)[:160] + ')' if outcome.theirs.error else ''}"
                    f": {explanation.note}"
                )
        if report is not None:
            report.write(
                json.dumps(
                    {
                        "id": outcome.case.id,
                        "rows": outcome.case.rows,
                        "item": outcome.case.item,
                        "options": outcome.case.options,
                        "script": outcome.case.script,
                        "ours": {
                            "score": outcome.ours.score,
                            "error": outcome.ours.error,
                        },
                        "theirs": {
                            "score": outcome.theirs.score,
                            "pass": outcome.theirs.passed,
                            "error": outcome.theirs.error,
                        },
                        "verdict": verdict,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    if report is not None:
        report.close()

    kinds = list(dict.fromkeys(o.case.kind for o in outcomes))
    print(
        f"{'kind':<20}{'cases':>7}{'identical':>11}{'documented':>12}{'undocumented':>14}"
    )
    for kind in kinds:
        total = sum(1 for o in outcomes if o.case.kind == kind)
        print(
            f"{kind:<20}{total:>7}{identical[kind]:>11}{documented[kind]:>12}"
            f"{len(undocumented[kind]):>14}"
        )
    print("Documented rows reproduced (cases):")
    for row_id in ROWS:
        print(f"  {row_id:<36}{reproduced[row_id]:>6}")

    problems: list[str] = []
    documented_ids = documented_row_ids()
    if sorted(documented_ids) != sorted(ROWS):
        problems.append(
            "the documented rows and conformance/rows.py differ: "
            f"only in docs/scoring/differences.md {sorted(set(documented_ids) - set(ROWS))}, "
            f"only in the suite {sorted(set(ROWS) - set(documented_ids))}"
        )
    missing = [row_id for row_id in ROWS if not reproduced[row_id]]
    if missing:
        problems.append(f"documented rows no case reproduces: {missing}")
    for kind, lines in undocumented.items():
        if not lines:
            continue
        print(f"undocumented differences in {kind}:")
        print("\n".join(lines[: args.show]))
        if len(lines) > args.show:
            print(f"  ... and {len(lines) - args.show} more")
    for problem in problems:
        print(problem)

    count = sum(len(lines) for lines in undocumented.values())
    elapsed = time.monotonic() - started
    print(
        f"{len(outcomes)} cases in {elapsed:.0f} s: {sum(identical.values())} identical, "
        f"{sum(documented.values())} documented differences"
    )
    print(f"{count} undocumented differences")
    return 1 if count or problems else 0


if __name__ == "__main__":
    sys.exit(main())
