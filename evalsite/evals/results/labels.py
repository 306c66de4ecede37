"""Overridden values in a reviewer's words: "verdict 3: supported → contradicted", not
"verdicts.2.verdict yes → no". One place for the override table, the audit summaries
and the queue's flip keys."""

from __future__ import annotations

from typing import Any

from evalsite.evals.results.item import value_label
from scoring import KINDS

PASS = "pass"
SCORE = "score"


def _pattern(path: str) -> str:
    return ".".join("*" if part.isdigit() else part for part in path.split("."))


def path_label(path: str) -> str:
    """Where a verdict override points, numbered from 1 like the analysis rows:
    "verdicts.2.verdict" → "verdict 3", "evaluations.0.used" → "evaluation 1 used",
    "category" → "category"."""
    parts = path.split(".")
    if len(parts) == 3 and parts[1].isdigit():
        head, index, name = parts
        noun = head[:-1] if head.endswith("s") else head
        where = f"{noun} {int(index) + 1}"
        return where if name == noun else f"{where} {name.replace('_', ' ')}"
    return path.replace("_", " ").replace(".", " ")


def path_value_label(kind: str, path: str, value: Any) -> str:
    """A verdict value in the scorer kind's own words ("yes" → "supported" for
    faithfulness, "hallucinated" for hallucination); "–" for none."""
    if value is None:
        return "–"
    spec = KINDS.get(kind)
    labels = spec.value_labels.get(_pattern(path), {}) if spec else {}
    return value_label(labels, value)


def _plain(value: Any, override_kind: str) -> str:
    if value is None:
        return "–"
    if override_kind == PASS:
        return "pass" if value else "fail"
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f"{value:g}"
    return str(value)


def override_what(*, override_kind: str, path: str) -> str:
    """What an override changed: "verdict 3", "score" or "pass/fail"."""
    if override_kind == PASS:
        return "pass/fail"
    if override_kind == SCORE:
        return "score"
    return path_label(path) if path else override_kind


def override_value(*, kind: str, override_kind: str, path: str, value: Any) -> str:
    """One side of an override ("supported", "pass", "0.5")."""
    if override_kind in (PASS, SCORE) or not path:
        return _plain(value, override_kind)
    return path_value_label(kind, path, value)


def override_change(
    *, kind: str, override_kind: str, path: str, old: Any, new: Any
) -> str:
    """ "verdict 3: supported → contradicted", "pass/fail: fail → pass", "score: 0.5 → 1"."""
    what = override_what(override_kind=override_kind, path=path)
    before = override_value(
        kind=kind, override_kind=override_kind, path=path, value=old
    )
    after = override_value(kind=kind, override_kind=override_kind, path=path, value=new)
    return f"{what}: {before} → {after}"
