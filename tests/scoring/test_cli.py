"""``python -m scoring score`` in a subprocess against the offline judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "scoring", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_cli_scores_a_jsonl_file(judge: Any, tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    lines = [
        {
            "id": "a",
            "input": "Where is the tower?",
            "output": "The Eiffel Tower is in Paris.",
            "context": ["The Eiffel Tower is in Paris."],
        },
        {
            "id": "b",
            "output": "The Eiffel Tower is in Rome.",
            "context": ["The Eiffel Tower is in Paris."],
        },
        {"id": "c", "output": "", "context": ["x"]},
    ]
    cases.write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n\nnot json\n", encoding="utf-8"
    )
    out = tmp_path / "out.jsonl"
    done = run_cli(
        "score",
        "--kind",
        "faithfulness",
        "--input",
        str(cases),
        "--output",
        str(out),
        "--base-url",
        judge.base_url,
        "--options",
        '{"scale": 10}',
    )
    assert done.returncode == 0, done.stderr
    results = [
        json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()
    ]
    assert [r.get("id") for r in results] == ["a", "b", "c", None]
    assert results[0]["score"] == 10 and results[0]["passed"] is True
    assert results[1]["score"] == 0 and results[1]["passed"] is False
    assert [s["name"] for s in results[0]["steps"]] == ["claims", "verdicts", "reason"]
    assert "messages" not in results[0]["steps"][0]
    assert results[2]["error_type"] == "CaseError" and results[2]["field"] == "output"
    assert results[3]["line"] == 5 and "not valid JSON" in results[3]["error"]
    assert "2 scored, 2 errors" in done.stderr
    assert "case" in done.stderr  # the tqdm progress bar
    assert judge.chat_requests() == 6


def test_cli_reads_stdin_and_writes_stdout_for_non_llm_kinds() -> None:
    case = {"output": "kitten", "reference": "sitting"}
    done = run_cli(
        "score",
        "--kind",
        "textual_difference",
        "--input",
        "-",
        "--no-progress",
        stdin=json.dumps(case),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["score"] == 0.6153846153846154
    assert result["steps"] == []


def test_cli_bad_options_exit_2() -> None:
    done = run_cli(
        "score",
        "--kind",
        "faithfulness",
        "--input",
        "-",
        "--options",
        '{"scale": -1}',
        stdin="",
    )
    assert done.returncode == 2
    assert "scale" in done.stderr


def test_cli_judge_errors_are_lines_not_crashes(judge: Any, tmp_path: Path) -> None:
    judge.script("malformed", "malformed")
    case = {"output": "Hi.", "reference": "Hello."}
    done = run_cli(
        "score",
        "--kind",
        "factuality",
        "--input",
        "-",
        "--base-url",
        judge.base_url,
        "--concurrency",
        "1",
        stdin=json.dumps(case) + "\n",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["error_type"] == "JudgeError"
    assert result["raw"] and result["steps"][0]["attempts"] == 2


def test_cli_lists_kinds() -> None:
    done = run_cli("kinds")
    names = [json.loads(line)["name"] for line in done.stdout.splitlines()]
    assert "faithfulness" in names and "tone_consistency" in names
