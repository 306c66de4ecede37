"""`make bench`: run every bench/bench_*.py, print one table, write bench/results.json.

Benchmarks that touch the database use a scratch database (never the dev data):
`<name>_bench` on Postgres when DATABASE_URL points at Postgres, else var/bench.sqlite3.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _scratch_database_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        import psycopg

        base, _, name = url.rpartition("/")
        bench_name = f"{name.split('?')[0]}_bench"
        # Connect to the maintenance database: the named one need not exist yet.
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [bench_name]
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{bench_name}"')
        return f"{base}/{bench_name}"
    var_dir = Path(os.environ.get("EVALSITE_VAR_DIR", ROOT / "var"))
    var_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{var_dir / 'bench.sqlite3'}"


def _setup_django() -> None:
    os.environ["DATABASE_URL"] = _scratch_database_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("only", nargs="*", help="bench module names, e.g. bench_ingest")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    _setup_django()
    names = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    if args.only:
        names = [n for n in names if n in args.only]
    rows: list[dict] = []
    for name in names:
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"bench.{name}")
            module_rows = module.run()
        except Exception as exc:
            traceback.print_exc()
            module_rows = [
                {
                    "section": name,
                    "name": "failed",
                    "value": None,
                    "unit": "",
                    "target": None,
                    "ok": False,
                    "note": repr(exc),
                }
            ]
        for row in module_rows:
            row.setdefault("module", name)
            row.setdefault("ok", None)
        rows.extend(module_rows)
        print(f"# {name} took {time.perf_counter() - started:.1f} s", file=sys.stderr)
    _print_table(rows)
    out = ROOT / "bench" / "results.json"
    if args.only and out.exists():
        # A partial run replaces only the rows of the modules it ran.
        previous = json.loads(out.read_text()).get("rows", [])
        rows = [r for r in previous if r.get("module") not in names] + rows
    out.write_text(
        json.dumps(
            {
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                },
                "database": os.environ["DATABASE_URL"].split("://")[0],
                "broker": "redis" if os.environ.get("REDIS_URL") else "filesystem",
                "rows": rows,
            },
            indent=2,
            default=str,
        )
    )
    print(f"\nwrote {out.relative_to(ROOT)}")
    missed = [r for r in rows if r.get("ok") is False]
    if missed:
        # A missed target is a finding to read in the table, not a crash of the benchmark.
        print(f"{len(missed)} row(s) missed their target: see the NO rows above.")
    return 0


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return "" if value is None else str(value)


def _print_table(rows: list[dict]) -> None:
    headers = ["section", "name", "value", "unit", "target", "ok"]
    table = [
        [
            _fmt(r.get(h))
            if h != "ok"
            else {True: "yes", False: "NO", None: ""}[r.get("ok")]
            for h in headers
        ]
        for r in rows
    ]
    widths = [
        max(len(h), *(len(row[i]) for row in table)) if table else len(h)
        for i, h in enumerate(headers)
    ]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    raise SystemExit(main())
