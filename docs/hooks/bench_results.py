"""mkdocs hook: put the figures of the last `make bench` (bench/results.json) into the
benchmarks page, where it says <!-- bench-results --> (every row), or
<!-- bench-results:SECTION --> (the rows of one section, e.g. `million`).

The page keeps the method and the targets; the figures come from the file at build
time, so they are never a dated copy. Without the file the page says so, and the build
still succeeds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MARKER = re.compile(r"<!-- bench-results(?::([\w-]+))? -->")
RESULTS = Path(__file__).resolve().parent.parent.parent / "bench" / "results.json"
NO_FIGURES = (
    "No figures yet: `bench/results.json` is absent. Run `make bench` (on Postgres and "
    "Redis for the figures that matter), then `make docs`."
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def results_markdown(path: Path | None = None, section: str | None = None) -> str:
    """The figures as markdown: a line about where they were measured, then a table
    (of one section's rows when `section` is given)."""
    path = RESULTS if path is None else path
    if not path.is_file():
        return NO_FIGURES
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data["rows"]
    except (ValueError, KeyError, TypeError) as exc:
        return f"No figures: `bench/results.json` could not be read ({exc.__class__.__name__})."
    if section is not None:
        rows = [row for row in rows if row.get("section") == section]
        if not rows:
            return (
                f"No figures of `{section}` in `bench/results.json` yet: run "
                f"`python -m bench` with that section on Postgres, then `make docs`."
            )
    if not rows:
        return NO_FIGURES
    machine = data.get("machine") or {}
    lines = [
        f"Measured on {_cell(machine.get('cpus'))} CPUs, Python "
        f"{_cell(machine.get('python'))}, database `{_cell(data.get('database'))}`, "
        f"broker `{_cell(data.get('broker'))}`. A row marked **NO** missed its target.",
        "",
        "| Section | Figure | Value | Unit | Target | Met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    met = {True: "yes", False: "**NO**", None: ""}
    for row in rows:
        cells = [
            row.get("section"),
            row.get("name"),
            row.get("value"),
            row.get("unit"),
            row.get("target"),
        ]
        lines.append(
            "| "
            + " | ".join(_cell(c) for c in cells)
            + f" | {met.get(row.get('ok'), '')} |"
        )
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda m: results_markdown(section=m.group(1)), markdown)
