"""scoring/ is plain Python: no django, celery, ninja or evalsite imports anywhere."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SCORING = Path(__file__).resolve().parents[2] / "scoring"
FORBIDDEN = {"django", "celery", "ninja", "evalsite"}


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            roots.add(node.args[0].value.split(".")[0])
    return roots


def test_walker_detects_forbidden_imports():
    code = (
        "import django.db\nfrom celery import shared_task\n"
        "import importlib\nimportlib.import_module('ninja')\nfrom evalsite.x import y\n"
    )
    assert _imported_roots(ast.parse(code)) >= FORBIDDEN


def test_no_module_under_scoring_imports_a_framework():
    files = sorted(SCORING.rglob("*.py"))
    assert len(files) >= 9
    offenders = {
        str(path.relative_to(SCORING)): sorted(
            _imported_roots(ast.parse(path.read_text())) & FORBIDDEN
        )
        for path in files
    }
    assert {name: roots for name, roots in offenders.items() if roots} == {}


def test_every_module_starts_with_future_annotations():
    for path in sorted(SCORING.rglob("*.py")):
        tree = ast.parse(path.read_text())
        body = tree.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            body = body[1:]  # module docstring
        if not body:
            continue
        first = body[0]
        assert isinstance(first, ast.ImportFrom) and first.module == "__future__", path


def test_importing_scoring_loads_no_framework():
    script = (
        "import json, sys, scoring, scoring.analysis, scoring.options, scoring.formulas, "
        "scoring.textkinds, scoring.registry, scoring.overrides\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in {'django', 'celery', 'ninja', 'evalsite'})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=SCORING.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
