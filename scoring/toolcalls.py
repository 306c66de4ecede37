"""Scorers of an agent's tool calls, computed without a judge (Mastra's code scorers).

The item carries the calls the agent made, in order, as ``tool_calls``: a list of
``{"name", "arguments", "result"}`` (only the names count here). What was expected comes
from the options (``expected_tool`` or ``expected_tool_order``) or else from the item's
``expected_tool_calls`` (names, or calls with a ``name``), read as an expected order; an
item may give them as ``expected_trajectory`` instead (the same shape). The trajectory
kinds read ``expected_trajectory`` first, tool_call_accuracy ``expected_tool_calls``
first (``expected_field``).

trajectory_accuracy (``createTrajectoryAccuracyScorerCode``): the share of expected
steps matched (see ``compare_steps``); an expected step that gives ``arguments`` or
``result`` matches only a call with the same ones.

tool_call_accuracy (``createToolCallAccuracyScorerCode`` in @mastra/evals 1.10.2):
1 or 0. No call at all: 0. With an expected order: 1 when the calls follow it: in strict
mode the calls are exactly that list; otherwise each expected tool's *first* call comes
after the previous one's (other calls may come between). With an expected tool: 1 when
it was called (strict mode: when it was the only call).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scoring.errors import CaseError

__all__ = [
    "called_in_order",
    "compare_steps",
    "expected_field",
    "tool_call_accuracy",
    "tool_names",
    "trajectory_accuracy",
]


def tool_names(
    case: Mapping[str, Any], field: str, *, required: bool
) -> list[str] | None:
    """The tool names of ``case[field]``: a list of calls (mappings with a non-empty
    ``name``) or, for expectations, of plain names. CaseError names the bad entry."""
    value = case.get(field)
    if value is None:
        if required:
            raise CaseError(
                f"the item has no {field} (a list of tool calls)", field=field
            )
        return None
    if not isinstance(value, list | tuple):
        raise CaseError(
            f"the item's {field} must be a list of tool calls, got {type(value).__name__}",
            field=field,
        )
    names: list[str] = []
    for index, call in enumerate(value):
        name = call.get("name") if isinstance(call, Mapping) else call
        if not isinstance(name, str) or not name.strip():
            raise CaseError(
                f"{field}[{index}] needs a tool name (a non-empty text)",
                field=f"{field}[{index}].name",
            )
        names.append(name)
    return names


def expected_field(case: Mapping[str, Any], first: str) -> str | None:
    """Which of the item's ``expected_trajectory`` / ``expected_tool_calls`` holds its
    expectation: ``first`` when it is given, else the other; None when neither is."""
    other = (
        "expected_tool_calls"
        if first == "expected_trajectory"
        else "expected_trajectory"
    )
    for field in (first, other):
        if case.get(field) is not None:
            return field
    return None


def called_in_order(
    actual: Sequence[str], expected: Sequence[str], strict: bool
) -> bool:
    """Mastra's order check: strict, the very same list; otherwise every expected tool
    was called and their first calls come in the expected order."""
    if strict:
        return list(actual) == list(expected)
    previous = -1
    for tool in expected:
        if tool not in actual:
            return False
        index = list(actual).index(tool)
        if index <= previous:
            return False
        previous = index
    return True


def tool_call_accuracy(
    case: Mapping[str, Any], options: Mapping[str, Any]
) -> dict[str, Any]:
    """The analysis of tool_call_accuracy: ``{"ratio": 0 or 1, ...details}``."""
    actual = tool_names(case, "tool_calls", required=True) or []
    expected_tool: str | None = options.get("expected_tool")
    order: list[str] | None = options.get("expected_tool_order") or None
    source = "options"
    if expected_tool is None and order is None:
        field = expected_field(case, "expected_tool_calls") or "expected_tool_calls"
        order = tool_names(case, field, required=False)
        source = "item"
        if not order:
            raise CaseError(
                "tool_call_accuracy needs an expected tool or tool order: set the option "
                "expected_tool or expected_tool_order, or give the item expected tool calls",
                field="expected_tool_calls",
            )
    strict = bool(options.get("strict_mode"))
    correct_tool = (
        (actual == [expected_tool] if strict else expected_tool in actual)
        if expected_tool is not None
        else None
    )
    correct_order = called_in_order(actual, order, strict) if order else None
    if not actual:
        ratio = 0.0
    elif order:
        ratio = 1.0 if correct_order else 0.0
    else:
        ratio = 1.0 if correct_tool else 0.0
    return {
        "ratio": ratio,
        "actual_tools": actual,
        "expected_tool": expected_tool,
        "expected_tool_order": order,
        "expected_from": source,
        "strict_mode": strict,
        "correct_tool_called": correct_tool,
        "correct_order_called": correct_order,
    }


# ------------------------------------------------------------ trajectory_accuracy


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: a boolean is not a number, 1 equals 1.0, key order does
    not matter (Mastra compares ``JSON.stringify`` texts, so it does; see the README)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(
            _same_json(x, y) for x, y in zip(a, b, strict=True)
        )
    return type(a) is type(b) and bool(a == b)


def _steps(case: Mapping[str, Any], field: str) -> list[dict[str, Any]] | None:
    """Calls as steps ``{"name", "arguments"?, "result"?}`` (a plain name: name only)."""
    names = tool_names(case, field, required=field == "tool_calls")
    if names is None:
        return None
    steps: list[dict[str, Any]] = []
    for name, call in zip(names, case[field], strict=True):
        step: dict[str, Any] = {"name": name}
        if isinstance(call, Mapping):
            for key in ("arguments", "result"):
                if key in call:
                    step[key] = call[key]
        steps.append(step)
    return steps


Same = Callable[[Any, Any], bool]


def _step_matches(
    actual: Mapping[str, Any], expected: Mapping[str, Any], same: Same = _same_json
) -> bool:
    """Same name, and the same arguments / result where the expected step gives them."""
    if actual["name"] != expected["name"]:
        return False
    for key in ("arguments", "result"):
        if key in expected and (
            key not in actual or not same(actual[key], expected[key])
        ):
            return False
    return True


def compare_steps(
    actual: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    ordering: str,
    allow_repeated: bool,
    *,
    same: Same = _same_json,
) -> dict[str, Any]:
    """Mastra's ``compareTrajectories`` on tool-call steps: matched expected steps / all
    expected steps, in ``strict`` (position by position; each extra call costs half an
    expected step), ``relaxed`` (in order, other calls between allowed) or
    ``unordered`` ordering; without ``allow_repeated``, 0.1 off per tool called more
    than once; clamped to [0, 1] and rounded to 2 decimals. No expected step: 1 when
    nothing was called, else 0. ``same`` compares arguments and results (the
    conformance suite swaps in Mastra's comparison of JSON texts)."""
    from scoring.formulas import round_half_up

    names = [s["name"] for s in actual]
    wanted = [s["name"] for s in expected]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    repeated = [name for name, count in counts.items() if count > 1]
    if not expected:
        return {
            "ratio": 1.0 if not actual else 0.0,
            "matched_steps": 0,
            "missing_steps": [],
            "extra_steps": names,
            "repeated_steps": repeated,
        }
    matched_indexes: set[int] = set()
    if ordering == "strict":
        for i in range(max(len(names), len(wanted))):
            if (
                i < len(names)
                and i < len(wanted)
                and _step_matches(actual[i], expected[i], same)
            ):
                matched_indexes.add(i)
    elif ordering == "unordered":
        used: set[int] = set()
        for i, step in enumerate(expected):
            for j, candidate in enumerate(actual):
                if j not in used and _step_matches(candidate, step, same):
                    matched_indexes.add(i)
                    used.add(j)
                    break
    else:  # relaxed
        last = -1
        for i, step in enumerate(expected):
            for j in range(last + 1, len(actual)):
                if names[j] == step["name"] and _step_matches(actual[j], step, same):
                    matched_indexes.add(i)
                    last = j
                    break
    score = len(matched_indexes) / len(expected)
    if ordering == "strict" and len(names) > len(wanted):
        score = max(0.0, score - (len(names) - len(wanted)) / len(wanted) * 0.5)
    if not allow_repeated and repeated:
        score = max(0.0, score - len(repeated) * 0.1)
    return {
        "ratio": round_half_up(max(0.0, min(1.0, score))),
        "matched_steps": len(matched_indexes),
        "missing_steps": [w for i, w in enumerate(wanted) if i not in matched_indexes],
        "extra_steps": [n for n in names if n not in set(wanted)],
        "repeated_steps": repeated,
    }


def trajectory_accuracy(
    case: Mapping[str, Any], options: Mapping[str, Any]
) -> dict[str, Any]:
    """The analysis of trajectory_accuracy: ``{"ratio", ...details}``."""
    actual = _steps(case, "tool_calls") or []
    order: list[str] | None = options.get("expected_tool_order")
    if order:
        expected = [{"name": name} for name in order]
        source = "options"
    else:
        field = expected_field(case, "expected_trajectory")
        expected = (_steps(case, field) if field else None) or []
        source = "item"
        if field is None:
            raise CaseError(
                "trajectory_accuracy needs an expected trajectory: set the option "
                "expected_tool_order, or give the item expected tool calls",
                field="expected_tool_calls",
            )
    comparison = compare_steps(
        actual, expected, options["ordering"], options["allow_repeated_steps"]
    )
    return {
        **comparison,
        "actual_tools": [s["name"] for s in actual],
        "expected_tools": [s["name"] for s in expected],
        "expected_from": source,
        "ordering": options["ordering"],
    }
