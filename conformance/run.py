"""Run both sides on the generated cases and collect their numbers.

Ours: ``scoring.judge_case`` (LLM kinds call the scripted judge; the others are
computed from the texts). Theirs: conformance/node/runner.mjs with the released packages.
Both run at the same time: the Node process in the background, ours in this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from conformance.cases import Case
from conformance.judge_server import ScriptedJudge, scripted_judge
from scoring import KINDS, ScoringError, judge_case, make_client, passes

__all__ = ["NODE_DIR", "Outcome", "SideResult", "cases_digest", "run_cases"]

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = NODE_DIR / "node_modules" / "node" / "bin" / "node"


@dataclass
class SideResult:
    score: float | str | None  # a number, "NaN", or None on error
    passed: bool | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    case: Case
    ours: SideResult
    theirs: SideResult
    judge: ScriptedJudge


def _ours(case: Case, client: openai.OpenAI | None) -> SideResult:
    spec = KINDS[case.kind]
    side_client = (
        client.with_options(
            default_headers={
                "x-conformance-case": case.id,
                "x-conformance-side": "ours",
            }
        )
        if client is not None and spec.needs_judge
        else None
    )
    try:
        result = judge_case(
            case.kind,
            case.item,
            case.options,
            side_client,
            model="conformance-judge",
            max_retries=0,
        )
    except ScoringError as exc:
        return SideResult(None, error=f"{type(exc).__name__}: {exc}")
    return SideResult(
        result.score,
        passed=passes(case.kind, result.score, case.options),
        details={"analysis": result.analysis},
    )


def cases_digest(cases: list[Case]) -> str:
    """What the reference side is given: if it is unchanged, so are its results."""
    digest = hashlib.sha256()
    for path in sorted(NODE_DIR.glob("*.json")) + [NODE_DIR / "runner.mjs"]:
        digest.update(path.read_bytes())
    for case in cases:
        digest.update(
            json.dumps([case.runner_line(), case.script], sort_keys=True).encode()
        )
    return digest.hexdigest()


def _start_node(
    cases: list[Case], tmp: Path, base_url: str, jobs: int, concurrency: int
) -> list[tuple[Path, subprocess.Popen[str]]]:
    if not NODE.exists():
        raise SystemExit(
            f"{NODE} is missing: run `make conformance` (it installs Node 22 and the packages)"
        )
    env = {**os.environ, "NODE_ENV": "production", "PROMPTFOO_DISABLE_TELEMETRY": "1"}
    env.pop("OPENAI_API_KEY", None)
    processes = []
    # Interleave the kinds so that every process gets its share of the slow ones.
    for job in range(jobs):
        cases_path = tmp / f"cases-{job}.jsonl"
        with cases_path.open("w", encoding="utf-8") as out:
            for case in cases[job::jobs]:
                out.write(json.dumps(case.runner_line(), ensure_ascii=False) + "\n")
        results_path = tmp / f"results-{job}.jsonl"
        command = [
            str(NODE),
            str(NODE_DIR / "runner.mjs"),
            str(cases_path),
            str(results_path),
            base_url,
            str(concurrency),
        ]
        process = subprocess.Popen(
            command,
            cwd=NODE_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append((results_path, process))
    return processes


def _collect(
    processes: list[tuple[Path, subprocess.Popen[str]]],
) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for results_path, process in processes:
        _, stderr = process.communicate()
        if process.returncode != 0:
            raise SystemExit(
                f"the Node runner failed ({process.returncode}):\n{stderr[-4000:]}"
            )
        # split("\n"), not splitlines(): texts may hold U+2028 or U+0085.
        text = results_path.read_text(encoding="utf-8")
        lines += [json.loads(line) for line in text.split("\n") if line.strip()]
    return lines


def run_cases(
    cases: list[Case],
    *,
    jobs: int = 2,
    concurrency: int = 8,
    reference: Path | None = None,
    reuse: bool = False,
) -> tuple[list[Outcome], dict[str, Any], bool]:
    """Both sides on every case: the outcomes, the runner's meta line, and whether the
    reference results were reused.

    The reference side runs in ``jobs`` Node processes (its scorers are CPU-bound),
    each with ``concurrency`` cases in flight; ours runs in this process meanwhile.
    Its results (and the prompts it sent) are saved to ``reference``; with ``reuse``,
    saved results for the very same cases are read back instead of running Node again
    (ours on a second Python version needs no second reference run).
    """
    digest = cases_digest(cases)
    saved: dict[str, Any] | None = None
    if reuse and reference is not None and reference.exists():
        saved = json.loads(reference.read_text(encoding="utf-8"))
        if saved.get("digest") != digest:
            saved = None
    judge = ScriptedJudge({c.id: c.script for c in cases if c.script is not None})
    with (
        tempfile.TemporaryDirectory(prefix="conformance-") as tmp,
        scripted_judge(judge) as base_url,
    ):
        processes = (
            [] if saved else _start_node(cases, Path(tmp), base_url, jobs, concurrency)
        )
        client = make_client(f"{base_url}/v1", "conformance", timeout=60)
        ours = {case.id: _ours(case, client) for case in cases}
        lines = saved["lines"] if saved else _collect(processes)
    if saved:
        for case_id, texts in saved["prompts"].items():
            judge.prompts[case_id]["mastra"] = texts
    elif reference is not None:
        reference.parent.mkdir(parents=True, exist_ok=True)
        prompts = {
            case_id: sides["mastra"]
            for case_id, sides in judge.prompts.items()
            if "mastra" in sides
        }
        reference.write_text(
            json.dumps({"digest": digest, "lines": lines, "prompts": prompts}),
            encoding="utf-8",
        )
    meta = next(line["meta"] for line in lines if "meta" in line)
    theirs = {
        line["id"]: SideResult(
            line.get("score"),
            passed=line.get("pass"),
            error=line.get("error"),
            details=line.get("details") or {},
        )
        for line in lines
        if "id" in line
    }
    missing = [c.id for c in cases if c.id not in theirs]
    if missing:
        raise SystemExit(
            f"the Node runner gave no result for {len(missing)} cases: {missing[:5]}"
        )
    if judge.unanswered:
        raise SystemExit(
            "the scripted judge could not answer:\n" + "\n".join(judge.unanswered[:10])
        )
    outcomes = [Outcome(c, ours[c.id], theirs[c.id], judge) for c in cases]
    return outcomes, meta, saved is not None
