"""The benchmarks page's figures come from bench/results.json at build time; without
the file the page says there are none and the build goes on."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

HOOK = (
    Path(__file__).resolve().parent.parent.parent
    / "docs"
    / "hooks"
    / "bench_results.py"
)


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_results_hook", HOOK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_results_the_page_says_no_figures_yet(tmp_path):
    hook = _hook()
    assert hook.results_markdown(tmp_path / "results.json").startswith("No figures yet")


def test_the_figures_and_their_targets_become_a_table(tmp_path):
    hook = _hook()
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps(
            {
                "machine": {"python": "3.11.2", "cpus": 2},
                "database": "postgres",
                "broker": "redis",
                "rows": [
                    {
                        "section": "ingest",
                        "name": "100k rows",
                        "value": 11.3,
                        "unit": "s",
                        "target": "<= 20",
                        "ok": True,
                    },
                    {
                        "section": "review",
                        "name": "override p95",
                        "value": 61.25,
                        "unit": "ms",
                        "target": "≤ 50",
                        "ok": False,
                    },
                    {
                        "section": "scoring",
                        "name": "a|b",
                        "value": 143000.0,
                        "unit": "ops/s",
                        "target": None,
                        "ok": None,
                    },
                ],
            }
        )
    )
    text = hook.results_markdown(path)
    assert "database `postgres`, broker `redis`" in text
    assert "| ingest | 100k rows | 11.300 | s | <= 20 | yes |" in text
    assert "| review | override p95 | 61.250 | ms | ≤ 50 | **NO** |" in text
    assert "| scoring | a\\|b | 143,000 | ops/s |  |  |" in text


def test_the_hook_fills_only_the_marked_place(tmp_path, monkeypatch):
    hook = _hook()
    monkeypatch.setattr(hook, "RESULTS", tmp_path / "absent.json")
    page = "# Benchmarks\n\n<!-- bench-results -->\n"
    assert "No figures yet" in hook.on_page_markdown(
        page, page=None, config={}, files=[]
    )
    assert hook.on_page_markdown("# Other\n", page=None) == "# Other\n"


def test_an_unreadable_file_does_not_break_the_build(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{not json")
    assert _hook().results_markdown(path).startswith("No figures")


def test_a_section_marker_shows_only_that_sections_rows(tmp_path, monkeypatch):
    hook = _hook()
    path = tmp_path / "results.json"
    row = {"value": 1.5, "unit": "s", "target": "≤ 2", "ok": True}
    path.write_text(
        json.dumps(
            {
                "rows": [
                    {"section": "million", "name": "CSV export", **row},
                    {"section": "export", "name": "CSV 100k", **row},
                ]
            }
        )
    )
    monkeypatch.setattr(hook, "RESULTS", path)
    page = "# B\n\n<!-- bench-results:million -->\n\n## All\n\n<!-- bench-results -->\n"
    text = hook.on_page_markdown(page, page=None)
    million, everything = text.split("## All")
    assert "| million | CSV export |" in million
    assert "CSV 100k" not in million
    assert "| million | CSV export |" in everything
    assert "| export | CSV 100k |" in everything
    # A section nobody measured yet says so instead of an empty table.
    assert "No figures of `ingest`" in hook.on_page_markdown(
        "<!-- bench-results:ingest -->", page=None
    )
