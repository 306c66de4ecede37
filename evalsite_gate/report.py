"""The gate's answer as a plain-text table (the log) and as Markdown (for a CI job to post)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsite_gate.decision import ScorerResult
from evalsite_gate.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION

HEADLINES = {
    EXIT_OK: "PASS: no regression beyond the margin",
    EXIT_REGRESSION: "FAIL: regression beyond the margin",
    EXIT_INCONCLUSIVE: "NOT ENOUGH EVIDENCE: an interval is too wide to tell",
}
COLUMNS = (
    "scorer",
    "dir",
    "n",
    "baseline",
    "candidate",
    "Δ mean",
    "95 % CI",
    "p",
    "Δ pass",
    "verdict",
)


@dataclass
class GateReport:
    """Everything the gate found, for the table and the summary."""

    url: str
    project_id: int
    run_id: int
    baseline_id: int
    margin: float
    exit_code: int
    results: Sequence[ScorerResult]
    match: dict[str, Any] = field(default_factory=dict)
    run_status: str = ""
    notes: list[str] = field(default_factory=list)


def _num(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _row(r: ScorerResult) -> list[str]:
    ci = (
        "–"
        if r.ci_low is None or r.ci_high is None
        else f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
    )
    return [
        r.name,
        "↑" if r.direction != "lower" else "↓",
        str(r.n),
        _num(r.baseline_mean),
        _num(r.candidate_mean),
        _num(r.delta, signed=True),
        ci,
        _p(r.p_value),
        _num(r.pass_rate_delta, signed=True),
        r.verdict,
    ]


def _match_line(report: GateReport) -> str:
    m = report.match
    if not m:
        return ""
    line = f"{m.get('matched', 0)} matched items"
    if m.get("only_in_a") or m.get("only_in_b"):
        line += (
            f" ({m.get('only_in_a', 0)} only in the baseline, "
            f"{m.get('only_in_b', 0)} only in the candidate)"
        )
    return line


def text_table(report: GateReport) -> str:
    rows = [list(COLUMNS), *(_row(r) for r in report.results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = (
        f"run {report.run_id} against baseline run {report.baseline_id}, "
        f"margin {report.margin:g}"
    )
    match = _match_line(report)
    out = [head + (f"; {match}" if match else ""), "", *lines, ""]
    out += [f"{r.name}: {r.verdict}: {r.reason}" for r in report.results]
    out += report.notes
    out += ["", HEADLINES[report.exit_code] + f" (exit {report.exit_code})"]
    return "\n".join(out) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: GateReport) -> str:
    project = f"{report.url}/projects/{report.project_id}"
    runs = (
        f"[run {report.run_id}]({project}/runs/{report.run_id}/) against baseline "
        f"[run {report.baseline_id}]({project}/runs/{report.baseline_id}/)"
    )
    compare = f"{project}/compare/?a={report.baseline_id}&b={report.run_id}"
    lines = [
        f"### evalsite gate: {HEADLINES[report.exit_code]}",
        "",
        f"{runs}, margin {report.margin:g} (score units)."
        + (f" {_match_line(report)}." if report.match else ""),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(COLUMNS))) + "|",
    ]
    for r in report.results:
        cells = _row(r)
        if r.verdict != "pass":
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    lines += ["", *(f"- {_md_cell(r.name)}: {r.reason}" for r in report.results)]
    lines += [f"- {_md_cell(note)}" for note in report.notes]
    lines += [
        "",
        "Δ is candidate − baseline over the items both runs scored; the 95 % interval "
        "is compare's paired t-interval and p its paired t-test. A scorer fails when "
        "its whole interval is a loss larger than the margin, passes when none of it "
        "is, and lacks evidence when the interval straddles the margin. "
        f"[Item by item]({compare}).",
        "",
    ]
    return "\n".join(lines)


def error_markdown(message: str, exit_code: int) -> str:
    return (
        f"### evalsite gate: could not decide (exit {exit_code})\n\n"
        f"{_md_cell(message)}\n"
    )
