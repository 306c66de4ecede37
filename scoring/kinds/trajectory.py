"""Trajectory, computed without a judge from the item's tool calls: accuracy against the
expected trajectory, efficiency (step budget, repeated calls), retries after failures
and forbidden tools, weighted. The algorithm is in ``scoring.trajectory``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from scoring.kinds.base import (
    KindDef,
    Number,
    OptionsModel,
    TextAnalysis,
    score_text_ratio,
)
from scoring.kinds.toolcalls import ToolName, TrajectoryAccuracyOptions, name_list


def _sequences(value: Any) -> Any:
    """Forbidden sequences as lists of names, or a text with one comma-separated
    sequence per line; blank: none."""
    if isinstance(value, str):
        rows = [
            [n.strip() for n in line.split(",") if n.strip()]
            for line in value.split("\n")
        ]
        return [row for row in rows if row]
    return value


def _names_or_empty(value: Any) -> Any:
    names = name_list(value)
    return [] if names is None else names


class TrajectoryWeights(OptionsModel):
    accuracy: Number = Field(default=0.4, ge=0, le=100, title="Accuracy")
    efficiency: Number = Field(default=0.3, ge=0, le=100, title="Efficiency")
    tool_failures: Number = Field(default=0.2, ge=0, le=100, title="Tool failures")
    blacklist: Number = Field(default=0.1, ge=0, le=100, title="Blacklist")


class TrajectoryOptions(TrajectoryAccuracyOptions):
    max_steps: int | None = Field(
        default=None,
        ge=0,
        le=100_000,
        title="Step budget",
        description="Most tool calls allowed; each call over it costs max_steps-th of the efficiency.",
    )
    no_redundant_calls: bool | None = Field(
        default=None,
        title="Penalise redundant calls",
        description=(
            "A call repeating the previous one (same tool, same arguments) costs 0.2 of "
            "the efficiency. Empty: checked only when a step budget is set."
        ),
        strict=True,
    )
    blacklisted_tools: Annotated[
        list[ToolName], BeforeValidator(_names_or_empty), Field(max_length=200)
    ] = Field(
        default_factory=list,
        title="Forbidden tools",
        description="Calling any of these (comma-separated) makes the score 0.",
    )
    blacklisted_sequences: Annotated[
        list[Annotated[list[ToolName], Field(min_length=1, max_length=50)]],
        BeforeValidator(_sequences),
        Field(max_length=100),
    ] = Field(
        default_factory=list,
        title="Forbidden sequences",
        description=(
            "One comma-separated sequence per line; calling one back to back makes "
            "the score 0."
        ),
    )
    max_retries_per_tool: int = Field(
        default=2,
        ge=0,
        le=1000,
        title="Retries allowed per tool",
        description=(
            'Retries after a failed call ("success": false) beyond this cost 0.2 of the '
            "tool-failure dimension each."
        ),
    )
    weights: TrajectoryWeights = Field(
        default_factory=TrajectoryWeights,
        title="Weights",
        description="Weight of each dimension that applies; they are normalised to sum to 1.",
    )


KIND = KindDef(
    name="trajectory",
    entry={
        "label": "Trajectory",
        "description": (
            "The agent's tool calls scored on accuracy against the expected "
            "trajectory, efficiency (step budget, repeated calls), retries after "
            "failures and forbidden tools, weighted. No judge."
        ),
        "needs_judge": False,
        "required_fields": ("tool_calls",),
        "direction": "higher",
        "steps": (),
        "overridable": {},
        "value_labels": {},
    },
    options=TrajectoryOptions,
    analysis=TextAnalysis,
    score=score_text_ratio,
)
