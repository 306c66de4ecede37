"""Reviewer overrides at the verdict level: set one value at a dotted path.

Paths are dotted with list indexes as numbers (``"verdicts.2.verdict"``,
``"evaluations.0.used"``, ``"category"``); ``KINDS[kind].overridable`` lists the
allowed patterns (``*`` for an index) and values.
"""

from __future__ import annotations

import copy
from typing import Any

from scoring.analysis import validate_analysis
from scoring.errors import AnalysisError
from scoring.options import check_kind
from scoring.registry import KINDS

__all__ = ["apply_override", "get_path", "overridable_count", "path_pattern"]


def _parts(path: str) -> list[str]:
    if (
        not isinstance(path, str)
        or not path
        or any(part == "" for part in path.split("."))
    ):
        raise AnalysisError(
            f"invalid path {path!r}: expected e.g. 'verdicts.2.verdict'", path=str(path)
        )
    return path.split(".")


def path_pattern(path: str) -> str:
    """``"verdicts.2.verdict"`` -> ``"verdicts.*.verdict"``."""
    return ".".join("*" if part.isdigit() else part for part in _parts(path))


def get_path(analysis: dict[str, Any], path: str) -> Any:
    """The value at a dotted path; raises ``AnalysisError`` if there is none."""
    node: Any = analysis
    walked: list[str] = []
    for part in _parts(path):
        walked.append(part)
        if isinstance(node, list) and part.isdigit():
            index = int(part)
            if index >= len(node):
                raise AnalysisError(
                    f"{'.'.join(walked)}: index {index} out of range (there are {len(node)})",
                    path=path,
                )
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise AnalysisError(
                f"the analysis has nothing at {'.'.join(walked)}", path=path
            )
    return node


def _normalise_value(pattern: str, value: Any, allowed: list[Any]) -> Any:
    if all(isinstance(item, bool) for item in allowed):
        if isinstance(value, bool):
            return value
        return None
    if isinstance(value, str):
        candidate = value.strip()
        candidate = candidate.upper() if pattern == "category" else candidate.lower()
        if candidate in allowed:
            return candidate
    return None


def overridable_count(kind: str, analysis: dict[str, Any] | None) -> int:
    """How many values of ``analysis`` a reviewer can flip: one per list entry for each
    ``*`` pattern (context_relevance: relevance and used, two per evaluation) plus one
    per scalar pattern; 0 without an analysis. The denominator of the flip rate."""
    check_kind(kind)
    if not analysis:
        return 0
    total = 0
    for pattern in KINDS[kind].overridable:
        head, *rest = pattern.split(".")
        if "*" in rest:
            entries = analysis.get(head)
            total += len(entries) if isinstance(entries, list) else 0
        else:
            total += 1
    return total


def apply_override(
    kind: str, analysis: dict[str, Any], path: str, value: Any
) -> dict[str, Any]:
    """Return a NEW analysis with ``value`` set at ``path`` (the input is not modified).

    Raises ``AnalysisError`` when the analysis is invalid, the path is not
    overridable for the kind or out of range, or the value is not allowed.
    """
    check_kind(kind)
    spec = KINDS[kind]
    pattern = path_pattern(path)
    if pattern not in spec.overridable:
        allowed_paths = (
            ", ".join(spec.overridable) or "none (override the score or pass instead)"
        )
        raise AnalysisError(
            f"{path!r} cannot be overridden for {kind}; overridable: {allowed_paths}",
            path=path,
        )
    allowed = spec.overridable[pattern]
    normalised = _normalise_value(pattern, value, allowed)
    if normalised is None:
        raise AnalysisError(
            f"{value!r} is not allowed at {path}; allowed: {', '.join(map(repr, allowed))}",
            path=path,
        )
    result = copy.deepcopy(validate_analysis(kind, analysis))
    get_path(result, path)  # raises when the path is out of range
    *parents, last = _parts(path)
    node: Any = result
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = normalised
    else:
        node[last] = normalised
    return result
