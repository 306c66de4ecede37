"""The unified trajectory scorer, computed without a judge (Mastra's
``createTrajectoryScorerCode``, @mastra/evals 1.10.2), on the item's tool calls.

Four dimensions, each in [0, 1], combined with weights (default accuracy 0.4,
efficiency 0.3, tool failures 0.2, blacklist 0.1) over the dimensions that apply:
- accuracy: ``compare_steps`` against the expected steps (the option
  ``expected_tool_order``, else the item's ``expected_trajectory``, else its
  ``expected_tool_calls``); applies when there are expected steps;
- efficiency: the mean of a step budget (``max_steps``: 1 within it, else
  ``max(0, 1 - over / max_steps)``) and, unless ``no_redundant_calls`` is false, a
  redundancy check (``max(0, 1 - 0.2 x calls that repeat the previous call with the same
  arguments)``); applies when ``max_steps`` or ``no_redundant_calls`` is set;
- blacklist: 0 when a forbidden tool or a forbidden contiguous sequence of tools was
  called, else 1; applies when anything is forbidden, and a violation makes the whole
  score 0;
- tool failures: ``max(0, 1 - 0.2 x retries beyond max_retries_per_tool)``, a retry being
  a call of the same tool right after a failed one (``"success": false`` on the call);
  applies when there was at least one retry.
Score = sum(weight / total weight x value), rounded to 2 decimals (half up); nothing that
applies: 1. We refuse an item with nothing to check (no expected steps, no budget, no
redundancy check, nothing forbidden) where Mastra returns 1 (README row
``trajectory-nothing-to-check``). Token and duration budgets and nested (child) steps are
not supported: an item's tool calls carry neither.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scoring.errors import CaseError
from scoring.toolcalls import Same, _same_json, _steps, compare_steps, expected_field

__all__ = [
    "blacklist_check",
    "efficiency_check",
    "expected_trajectory",
    "tool_failures",
    "trajectory",
]


def _round2_plain(x: float) -> float:
    """``Math.round(x * 100) / 100``: half up, without the epsilon of round_half_up."""
    return math.floor(x * 100 + 0.5) / 100


def _clamp(x: float) -> float:
    return max(0.0, min(1.0, x))


def expected_trajectory(
    case: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The expected steps and where they came from: the option expected_tool_order,
    the item's expected_trajectory, else its expected_tool_calls; (None, None) if none."""
    order = options.get("expected_tool_order")
    if order:
        return [{"name": name} for name in order], "options"
    field = expected_field(case, "expected_trajectory")
    if field is None:
        return None, None
    return _steps(case, field) or [], field


def efficiency_check(
    actual: list[dict[str, Any]],
    max_steps: int | None,
    no_redundant_calls: bool,
    same: Same = _same_json,
) -> dict[str, Any]:
    """Mastra's ``checkTrajectoryEfficiency`` on tool calls (no tokens, no durations)."""
    total = len(actual)
    redundant: list[dict[str, Any]] = []
    if no_redundant_calls:
        for i in range(1, total):
            previous, current = actual[i - 1], actual[i]
            if previous["name"] == current["name"]:
                a, b = previous.get("arguments"), current.get("arguments")
                if ("arguments" in previous) == ("arguments" in current) and (
                    "arguments" not in previous or same(a, b)
                ):
                    redundant.append({"name": current["name"], "index": i})
    dimensions: list[float] = []
    over = max_steps is not None and total > max_steps
    if max_steps is not None:
        if not over:
            dimensions.append(1.0)
        elif max_steps == 0:
            dimensions.append(0.0)  # Mastra: 1 - n / 0 = -Infinity, clamped to 0
        else:
            dimensions.append(max(0.0, 1 - (total - max_steps) / max_steps))
    if no_redundant_calls:
        dimensions.append(1.0 if not redundant else max(0.0, 1 - len(redundant) * 0.2))
    total_score = 0.0
    for value in dimensions:  # left to right, as Mastra's reduce
        total_score += value
    score = total_score / len(dimensions) if dimensions else 1.0
    from scoring.formulas import round_half_up

    return {
        "score": round_half_up(_clamp(score)),
        "total_steps": total,
        "over_step_budget": over,
        "redundant_calls": redundant,
    }


def blacklist_check(
    names: list[str], tools: list[str], sequences: list[list[str]]
) -> dict[str, Any]:
    """Forbidden tools called, and forbidden sequences called back to back."""
    violated_tools = [tool for tool in tools if tool in names]
    violated_sequences: list[list[str]] = []
    for sequence in sequences:
        if not sequence:
            continue
        width = len(sequence)
        if any(names[i : i + width] == sequence for i in range(len(names) - width + 1)):
            violated_sequences.append(sequence)
    return {
        "score": 0.0 if violated_tools or violated_sequences else 1.0,
        "violated_tools": violated_tools,
        "violated_sequences": violated_sequences,
    }


def tool_failures(calls: list[dict[str, Any]], max_retries: int) -> dict[str, Any]:
    """Mastra's ``analyzeToolFailures``: runs of one tool; a call after a failed one
    (``success`` false) of the same tool is a retry; retries beyond ``max_retries`` per
    run cost 0.2 each."""
    patterns: list[dict[str, Any]] = []
    total_retries = 0
    i = 0
    while i < len(calls):
        name = calls[i]["name"]
        retries = 0
        j = i + 1
        while j < len(calls) and calls[j]["name"] == name:
            if calls[j - 1].get("success") is False:
                retries += 1
            j += 1
        if retries:
            succeeded = calls[j - 1].get("success") is not False
            patterns.append(
                {
                    "tool": name,
                    "retries": retries,
                    "eventually_succeeded": succeeded,
                    "fell_back_to": calls[j]["name"]
                    if j < len(calls) and not succeeded
                    else None,
                }
            )
            total_retries += retries
        i = j
    excess = sum(max(0, p["retries"] - max_retries) for p in patterns)
    from scoring.formulas import round_half_up

    return {
        "score": round_half_up(_clamp(1 - excess * 0.2)),
        "patterns": patterns,
        "total_retries": total_retries,
        "excessive_retry_tools": [
            p["tool"] for p in patterns if p["retries"] > max_retries
        ],
    }


def _success_flags(case: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = _steps(case, "tool_calls") or []
    for step, raw in zip(calls, case["tool_calls"], strict=True):
        success = raw.get("success") if isinstance(raw, Mapping) else None
        if success is not None and not isinstance(success, bool):
            raise CaseError(
                "a tool call's success must be true or false",
                field="tool_calls",
            )
        if success is not None:
            step["success"] = success
    return calls


def trajectory(
    case: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    same: Same = _same_json,
) -> dict[str, Any]:
    """The analysis of ``trajectory``: ``{"ratio", "dimensions", ...details}``."""
    actual = _success_flags(case)
    names = [s["name"] for s in actual]
    expected, source = expected_trajectory(case, options)
    max_steps = options.get("max_steps")
    redundancy = options.get("no_redundant_calls")
    tools = list(options.get("blacklisted_tools") or [])
    sequences = [list(s) for s in options.get("blacklisted_sequences") or []]
    nothing_set = max_steps is None and redundancy is None and not any(sequences)
    if expected is None and nothing_set and not tools:
        raise CaseError(
            "trajectory has nothing to check: give the item an expected trajectory "
            "(or expected tool calls), or set expected_tool_order, max_steps, "
            "no_redundant_calls or a blacklist",
            field="expected_trajectory",
        )
    weights = options["weights"]
    parts: list[tuple[str, float, float]] = []  # (dimension, weight, value)
    details: dict[str, Any] = {"actual_tools": names, "expected_from": source}
    if expected is not None:
        accuracy = compare_steps(
            actual,
            expected,
            options["ordering"],
            options["allow_repeated_steps"],
            same=same,
        )
        details["accuracy"] = accuracy
        parts.append(("accuracy", weights["accuracy"], accuracy["ratio"]))
    if max_steps is not None or redundancy is not None:
        efficiency = efficiency_check(
            actual, max_steps, redundancy is not False, same=same
        )
        details["efficiency"] = efficiency
        parts.append(("efficiency", weights["efficiency"], efficiency["score"]))
    failures = tool_failures(actual, options["max_retries_per_tool"])
    details["tool_failures"] = failures
    if failures["patterns"]:
        parts.append(("tool_failures", weights["tool_failures"], failures["score"]))
    blacklist = None
    if tools or any(sequences):
        blacklist = blacklist_check(names, tools, sequences)
        details["blacklist"] = blacklist
        parts.append(("blacklist", weights["blacklist"], blacklist["score"]))
    details["dimensions"] = {name: value for name, _, value in parts}
    if blacklist is not None and blacklist["score"] == 0:
        return {"ratio": 0.0, **details}
    if not parts:
        return {"ratio": 1.0, **details}
    total_weight = 0.0
    for _, weight, _ in parts:
        total_weight += weight
    level = 0.0
    if total_weight > 0:
        for _, weight, value in parts:
            level += weight / total_weight * value
    else:
        level = 1.0
    return {"ratio": _clamp(_round2_plain(level)), **details}
