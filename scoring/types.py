"""Plain data types passed into the scoring library."""

from __future__ import annotations

from typing import Any, TypedDict


class Case(TypedDict, total=False):
    """One item to score.

    ``context`` holds the retrieved chunks in order; ``reference`` is the ideal
    answer (needed by factuality, optional elsewhere); ``metadata`` is carried
    along untouched. An agent's item may carry ``tool_calls`` (the calls it made, in
    order: ``{"name", "arguments", "result"}``, and ``"success": false`` for a failed
    call), ``expected_tool_calls`` or ``expected_trajectory`` (tool names, or calls with a
    ``name``; see ``scoring.toolcalls.expected_field``) and ``conversation`` (messages
    ``{"role", "content"}``, the ``output`` being the last assistant turn).
    """

    input: str
    output: str
    context: list[str]
    reference: str | None
    metadata: dict[str, Any]
    tool_calls: list[dict[str, Any]]
    expected_tool_calls: list[Any]
    expected_trajectory: list[Any]
    conversation: list[dict[str, Any]]
    baseline_output: str
    system_prompt: str
