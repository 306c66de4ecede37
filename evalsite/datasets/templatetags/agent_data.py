"""An item's agent data laid out for a page: `{% agent_view item as agent %}`.

Values are cut here, not in the template, so that an item near the upload limits (a
1,000-turn conversation, a megabyte of tool result) still renders a page of a sensible
size: long texts end with how much was left out, long lists show their first entries.
Everything is returned as plain text; the templates autoescape it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django import template

from evalsite.datasets.agentdata import MESSAGE_KEYS

register = template.Library()

MAX_TEXT_CHARS = 4000
MAX_JSON_CHARS = 1500
MAX_ROWS = 200


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def json_text(value: Any, limit: int = MAX_JSON_CHARS) -> str:
    """A JSON value as readable text: a string as itself, anything else indented."""
    if isinstance(value, str):
        return clip(value, limit)
    return clip(json.dumps(value, ensure_ascii=False, indent=2), limit)


@dataclass
class Turn:
    number: int
    role: str
    content: str
    extra: str = ""  # name / tool_call_id / tool_calls, as JSON


@dataclass
class Call:
    number: int
    name: str
    arguments: str | None = None  # None: not given (differs from an empty object)
    result: str | None = None
    success: bool | None = None
    id: str = ""


@dataclass
class AgentView:
    system_prompt: str = ""
    baseline_output: str = ""
    turns: list[Turn] = field(default_factory=list)
    turns_hidden: int = 0
    has_conversation: bool = False
    tool_calls: list[Call] = field(default_factory=list)
    tool_calls_hidden: int = 0
    has_tool_calls: bool = False
    expected_tool_calls: list[Call] = field(default_factory=list)
    expected_tool_calls_hidden: int = 0
    has_expected_tool_calls: bool = False
    expected_trajectory: list[Call] = field(default_factory=list)
    expected_trajectory_hidden: int = 0
    has_expected_trajectory: bool = False

    @property
    def has_any(self) -> bool:
        return bool(
            self.system_prompt
            or self.baseline_output
            or self.has_conversation
            or self.has_tool_calls
            or self.has_expected_tool_calls
            or self.has_expected_trajectory
        )


def _turn(number: int, message: Any) -> Turn:
    if not isinstance(message, dict):  # not from an upload; shown, not trusted
        return Turn(number, "?", json_text(message, MAX_TEXT_CHARS))
    extra = {k: message[k] for k in MESSAGE_KEYS[2:] if k in message}
    return Turn(
        number=number,
        role=str(message.get("role") or "?")[:64],
        content=clip(str(message.get("content") or ""), MAX_TEXT_CHARS),
        extra=json_text(extra) if extra else "",
    )


def _call(number: int, call: Any) -> Call:
    if isinstance(call, str):  # an expected step given as a tool name
        return Call(number=number, name=call[:200])
    if not isinstance(call, dict):
        return Call(number=number, name="?", result=json_text(call))
    success = call.get("success")
    return Call(
        number=number,
        name=str(call.get("name") or "?")[:200],
        arguments=json_text(call["arguments"]) if "arguments" in call else None,
        result=json_text(call["result"]) if "result" in call else None,
        success=success if isinstance(success, bool) else None,
        id=str(call.get("id", ""))[:200],
    )


def _rows(value: Any) -> tuple[list[Any], int]:
    if not isinstance(value, list):
        return [], 0
    return value[:MAX_ROWS], max(0, len(value) - MAX_ROWS)


@register.simple_tag
def agent_view(item: Any) -> AgentView:
    view = AgentView(
        system_prompt=clip(getattr(item, "system_prompt", "") or "", MAX_TEXT_CHARS),
        baseline_output=clip(
            getattr(item, "baseline_output", "") or "", MAX_TEXT_CHARS
        ),
    )
    conversation = getattr(item, "conversation", None)
    if conversation is not None:
        shown, view.turns_hidden = _rows(conversation)
        view.turns = [_turn(i, m) for i, m in enumerate(shown, start=1)]
        view.has_conversation = True
    for name in ("tool_calls", "expected_tool_calls", "expected_trajectory"):
        value = getattr(item, name, None)
        if value is None:
            continue
        shown, hidden = _rows(value)
        setattr(view, name, [_call(i, c) for i, c in enumerate(shown, start=1)])
        setattr(view, f"{name}_hidden", hidden)
        setattr(view, f"has_{name}", True)
    return view
