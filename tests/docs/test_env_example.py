"""Every environment variable the app reads is in docker/.env.example and in the
configuration table of docs/operations/configuration.md, and neither lists one the app
does not read.

The names are taken from the code itself: environment reads in evalsite/, scoring/ and
manage.py and docker/*.py (django-environ's ``env.<type>("NAME")``, ``os.environ.get``, ``os.getenv``,
``os.environ[...]``, and calls to a function that passes its parameter to one of those,
such as ``_login_rate("NAME", ...)``), and ``${NAME}`` expansions in Procfile.dev,
Procfile.serve and docker/.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
CONFIGURATION = ROOT / "docs" / "operations" / "configuration.md"
ENV_EXAMPLE = ROOT / "docker" / ".env.example"
# Set by the Python runtime's entry points for Django itself, not a setting of ours.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE"}
_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SHELL_EXPANSION = re.compile(r"\$\{([A-Z][A-Z0-9_]*)")
_ENV_METHODS = {"str", "int", "bool", "float", "list", "json", "url", "path"}


def _python_sources() -> Iterator[Path]:
    yield ROOT / "manage.py"
    for folder in ("evalsite", "scoring"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path
    yield from sorted((ROOT / "docker").glob("*.py"))


def _is_env_read(call: ast.Call) -> bool:
    """``env.str(...)``, ``environ.Env().int(...)``, ``env(...)``,
    ``os.environ.get(...)``, ``os.getenv(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in {"env", "getenv"}
    if not isinstance(func, ast.Attribute):
        return False
    owner = ast.unparse(func.value)
    if func.attr in _ENV_METHODS and (owner == "env" or owner.endswith("Env()")):
        return True
    if func.attr == "get" and owner in {"os.environ", "environ"}:
        return True
    return func.attr == "getenv" and owner == "os"


def _first_arg(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    for keyword in call.keywords:
        if keyword.arg in {"var", "key", "name"}:
            return keyword.value
    return None


def _forwarders(tree: ast.AST) -> set[str]:
    """Functions that read the variable named by one of their parameters."""
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        params = {a.arg for a in node.args.args + node.args.kwonlyargs}
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and _is_env_read(inner):
                arg = _first_arg(inner)
                if isinstance(arg, ast.Name) and arg.id in params:
                    names.add(node.name)
    return names


def _literal(node: ast.expr | None) -> str | None:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return None
    return node.value if _NAME.match(node.value) else None


def names_in_python(source: str) -> set[str]:
    tree = ast.parse(source)
    forwarders = _forwarders(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            forwarded = isinstance(func, ast.Name) and func.id in forwarders
            if _is_env_read(node) or forwarded:
                name = _literal(_first_arg(node))
                if name:
                    found.add(name)
        elif (
            isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ"
        ) and isinstance(node.ctx, ast.Load):
            name = _literal(node.slice)
            if name:
                found.add(name)
    return found


def names_the_app_reads() -> set[str]:
    names: set[str] = set()
    for path in _python_sources():
        names |= names_in_python(path.read_text(encoding="utf-8"))
    for path in [
        ROOT / "Procfile.dev",
        ROOT / "Procfile.serve",
        *sorted((ROOT / "docker").iterdir()),
    ]:
        if path.is_file() and path.name != ".env.example":
            names |= set(_SHELL_EXPANSION.findall(path.read_text(encoding="utf-8")))
    return names - NOT_SETTINGS


def names_in_env_example() -> set[str]:
    """Assignments, commented out or not: ``NAME=...`` or ``# NAME=...``."""
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    return set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))


def names_in_configuration_table() -> set[str]:
    """The first column of the table under "## Every variable"; a cell may name several
    variables separated by " / " (a pair of limits)."""
    text = CONFIGURATION.read_text(encoding="utf-8")
    start = text.index("\n## Every variable")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell))
    return names


@pytest.fixture(scope="module")
def read_by_app() -> set[str]:
    names = names_the_app_reads()
    # The scan itself: these are read through env.*, a forwarding helper, evals' conf
    # and Procfile.dev; if one goes missing the scan, not the docs, is wrong.
    assert {
        "SECRET_KEY",
        "LOGIN_RATE_PER_IP",
        "JUDGE_OUTAGE_SECONDS",
        "WORKER_CONCURRENCY",
    } <= names
    return names


def test_env_example_lists_every_variable_the_app_reads(read_by_app):
    missing = read_by_app - names_in_env_example()
    assert not missing, f"add to docker/.env.example: {sorted(missing)}"


def test_env_example_lists_nothing_the_app_does_not_read(read_by_app):
    extra = names_in_env_example() - read_by_app
    assert not extra, (
        f"docker/.env.example lists variables nothing reads: {sorted(extra)}"
    )


def test_configuration_table_has_every_variable_the_app_reads(read_by_app):
    missing = read_by_app - names_in_configuration_table()
    assert not missing, f"add to docs/operations/configuration.md: {sorted(missing)}"


def test_configuration_table_has_nothing_the_app_does_not_read(read_by_app):
    extra = names_in_configuration_table() - read_by_app
    assert not extra, (
        f"the configuration table lists variables nothing reads: {sorted(extra)}"
    )


def test_the_scan_finds_each_way_of_reading_a_variable():
    source = """
import os
import environ
env = environ.Env()
VAR = environ.Env().str("A_VAR", default="x")
DEBUG = env.bool("B_VAR", default=True)
os.environ.get("C_VAR")
os.getenv("D_VAR")
os.environ["E_VAR"]
os.environ["NOT_READ"] = "written, not read"
os.environ.setdefault("ALSO_NOT_READ", "x")

def _rate(name, default):
    return env.str(name, default=default)

RATE = _rate("F_VAR", "1/m")
env.str(some_variable)
"""
    assert names_in_python(source) == {
        "A_VAR",
        "B_VAR",
        "C_VAR",
        "D_VAR",
        "E_VAR",
        "F_VAR",
    }
