"""Plain data types passed into the scoring library."""

from __future__ import annotations

from typing import Any, TypedDict


class Case(TypedDict, total=False):
    """One item to score.

    ``context`` holds the retrieved chunks in order; ``reference`` is the ideal
    answer (needed by factuality, optional elsewhere); ``metadata`` is carried
    along untouched. An agent's item may carry ``tool_calls`` (the calls it made, in
    order: ``{"name", "arguments", "result"}``) and ``expected_tool_calls`` (tool names,
    or calls with a ``name``).
    """

    input: str
    output: str
    context: list[str]
    reference: str | None
    metadata: dict[str, Any]
    tool_calls: list[dict[str, Any]]
    expected_tool_calls: list[Any]
    baseline_output: str
    system_prompt: str
