"""The tool-call kinds, computed without a judge from the item's tool calls: tool call
accuracy (the expected tool, or tools in order: 1 or 0) and trajectory accuracy (the
share of the expected calls made, in order or not). Their algorithms are in
``scoring.toolcalls``. The tool-name option types here are shared with the agent and
trajectory kinds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from scoring.kinds.base import (
    CommonOptions,
    KindDef,
    TextAnalysis,
    optional_name,
    score_text_ratio,
)


def name_list(value: Any) -> Any:
    """Tool names as a list, or as one comma-separated text (a form field); blank: none."""
    if isinstance(value, str):
        names = [name.strip() for name in value.split(",")]
        return [name for name in names if name] or None
    if isinstance(value, list) and not value:
        return None
    return value


ToolName = Annotated[str, Field(min_length=1, max_length=200)]


class ToolCallAccuracyOptions(CommonOptions):
    expected_tool: Annotated[ToolName | None, BeforeValidator(optional_name)] = Field(
        default=None,
        title="Expected tool",
        description=(
            "The tool the agent should call. Leave empty to use the expected tool "
            "order, or else the item's expected tool calls."
        ),
    )
    expected_tool_order: Annotated[
        list[ToolName] | None, BeforeValidator(name_list)
    ] = Field(
        default=None,
        title="Expected tool order",
        description=(
            "Tools the agent should call in this order (comma-separated). It wins "
            "over the expected tool."
        ),
    )
    strict_mode: bool = Field(
        default=False,
        title="Strict",
        description=(
            "Expected tool: it must be the only call. Expected order: the calls must "
            "be exactly that list."
        ),
        strict=True,
    )


class TrajectoryAccuracyOptions(CommonOptions):
    expected_tool_order: Annotated[
        list[ToolName] | None, BeforeValidator(name_list)
    ] = Field(
        default=None,
        title="Expected tools",
        description=(
            "The tools the agent should call (comma-separated), compared by name. "
            "Leave empty to use the item's expected tool calls, whose arguments and "
            "results must match too when they are given."
        ),
    )
    ordering: Literal["relaxed", "strict", "unordered"] = Field(
        default="relaxed",
        title="Ordering",
        description=(
            "relaxed: in this order, other calls between allowed; strict: position "
            "by position, extra calls cost; unordered: all present, any order."
        ),
    )
    allow_repeated_steps: bool = Field(
        default=True,
        title="Allow repeated calls",
        description="If off, 0.1 is taken off for every tool called more than once.",
        strict=True,
    )


TOOL_CALL_ACCURACY = KindDef(
    name="tool_call_accuracy",
    entry={
        "label": "Tool call accuracy",
        "description": (
            "Whether the agent called the expected tool, or the expected tools in "
            "order (1 or 0), from the item's tool calls. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
    options=ToolCallAccuracyOptions,
    analysis=TextAnalysis,
    score=score_text_ratio,
)
TRAJECTORY_ACCURACY = KindDef(
    name="trajectory_accuracy",
    entry={
        "label": "Trajectory accuracy",
        "description": (
            "Share of the expected tool calls the agent made, in order (relaxed or "
            "strict) or in any order, from the item's tool calls. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
    options=TrajectoryAccuracyOptions,
    analysis=TextAnalysis,
    score=score_text_ratio,
)
