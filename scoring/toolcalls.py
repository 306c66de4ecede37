"""Scorers of an agent's tool calls, computed without a judge (Mastra's code scorers).

The item carries the calls the agent made, in order, as ``tool_calls``: a list of
``{"name", "arguments", "result"}`` (only the names count here). What was expected comes
from the options (``expected_tool`` or ``expected_tool_order``) or else from the item's
``expected_tool_calls`` (names, or calls with a ``name``), read as an expected order.

tool_call_accuracy (``createToolCallAccuracyScorerCode`` in @mastra/evals 1.10.2):
1 or 0. No call at all: 0. With an expected order: 1 when the calls follow it: in strict
mode the calls are exactly that list; otherwise each expected tool's *first* call comes
after the previous one's (other calls may come between). With an expected tool: 1 when
it was called (strict mode: when it was the only call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scoring.errors import CaseError

__all__ = ["called_in_order", "tool_call_accuracy", "tool_names"]


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
        order = tool_names(case, "expected_tool_calls", required=False)
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
