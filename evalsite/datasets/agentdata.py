"""An agent's data on a dataset item: its shapes, checked on upload.

Plain Python (no Django): datasets.parsing.mapping calls `agent_value` for each mapped agent column
of a row after decoding it, and the item page and exports read the stored values.

Field names are the keys of the case `scoring` reads (scoring/toolcalls.py):
- ``system_prompt``, ``baseline_output``: text.
- ``conversation``: a list of messages ``{"role", "content"}`` (``name``,
  ``tool_call_id`` and ``tool_calls`` are kept when given; a null content is "").
- ``tool_calls``: the calls the agent made, in order: ``{"name", "arguments"?,
  "result"?, "success"?, "id"?}`` (``"success": false`` marks a failed call).
- ``expected_tool_calls``, ``expected_trajectory``: the same calls, or plain tool
  names.

Any other key in a message or a call is refused rather than dropped: ``"args"`` for
``"arguments"`` would otherwise import a trajectory whose arguments never match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.datasets.parsing.text import json_type

TEXT_FIELDS = ("system_prompt", "baseline_output")
JSON_FIELDS = (
    "conversation",
    "tool_calls",
    "expected_tool_calls",
    "expected_trajectory",
)
AGENT_FIELDS = (
    "system_prompt",
    "conversation",
    "tool_calls",
    "expected_tool_calls",
    "expected_trajectory",
    "baseline_output",
)

LABELS = {
    "system_prompt": "System prompt",
    "conversation": "Conversation",
    "tool_calls": "Tool calls",
    "expected_tool_calls": "Expected tool calls",
    "expected_trajectory": "Expected trajectory",
    "baseline_output": "Baseline output",
}

# A conversation or a list of calls may have this many entries: far beyond a real
# agent run, and it bounds what the item page lays out.
MAX_ENTRIES = 1000
MAX_ROLE_CHARS = 64
MAX_NAME_CHARS = 200
MESSAGE_KEYS = ("role", "content", "name", "tool_call_id", "tool_calls")
# "success": false marks a failed call (the trajectory kind counts retries after one).
CALL_KEYS = ("name", "arguments", "result", "success", "id")

_CALL_EXAMPLE = '{"name": "search", "arguments": {"q": "..."}, "result": "..."}'
_MESSAGE_EXAMPLE = '{"role": "user", "content": "..."}'
_SHAPES = {
    "conversation": f"a JSON list of messages like [{_MESSAGE_EXAMPLE}]",
    "tool_calls": f"a JSON list of tool calls like [{_CALL_EXAMPLE}]",
    "expected_tool_calls": (
        f'a JSON list of tool names or tool calls, like ["search"] or [{_CALL_EXAMPLE}]'
    ),
    "expected_trajectory": (
        f'a JSON list of tool names or tool calls, like ["search"] or [{_CALL_EXAMPLE}]'
    ),
}


class AgentDataError(ValueError):
    """The value does not have its field's shape; the message says where and why."""


def shape_of(field: str) -> str:
    return _SHAPES[field]


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        got = json_type(value) if value is not None else "missing"
        raise AgentDataError(f'{where} needs a "name": a non-empty text (got {got}).')
    if len(value) > MAX_NAME_CHARS:
        raise AgentDataError(
            f"{where}'s name is {len(value):,} characters long; at most "
            f"{MAX_NAME_CHARS} for a tool name."
        )
    return value


def _unknown_keys(
    entry: Mapping[str, Any], allowed: tuple[str, ...], where: str
) -> None:
    unknown = [k for k in entry if k not in allowed]
    if unknown:
        shown = ", ".join(repr(k[:40]) for k in unknown[:3])
        raise AgentDataError(
            f"{where} has the key{'s' if len(unknown) > 1 else ''} {shown}, which "
            f"{'are' if len(unknown) > 1 else 'is'} not one of {', '.join(allowed)}."
        )


def _call(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise AgentDataError(
            f"{where} is a JSON {json_type(entry)}, not an object like {_CALL_EXAMPLE}."
        )
    _unknown_keys(entry, CALL_KEYS, where)
    _name(entry.get("name"), where)
    if "success" in entry and not isinstance(entry["success"], bool):
        raise AgentDataError(f'{where}\'s "success" must be true or false.')
    if "id" in entry and not isinstance(entry["id"], str | int):
        raise AgentDataError(f'{where}\'s "id" must be a text or a number.')
    return entry


def _message(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise AgentDataError(
            f"{where} is a JSON {json_type(entry)}, not an object like {_MESSAGE_EXAMPLE}."
        )
    _unknown_keys(entry, MESSAGE_KEYS, where)
    role = entry.get("role")
    if not isinstance(role, str) or not role.strip():
        got = json_type(role) if role is not None else "missing"
        raise AgentDataError(
            f'{where} needs a "role" such as "user" or "assistant" (got {got}).'
        )
    if len(role) > MAX_ROLE_CHARS:
        raise AgentDataError(
            f"{where}'s role is {len(role):,} characters long; at most {MAX_ROLE_CHARS}."
        )
    message: dict[str, Any] = dict(entry)
    content = message.get("content")
    if content is None:
        # OpenAI-style assistant turns that only call tools have a null content.
        message["content"] = ""
    elif not isinstance(content, str):
        raise AgentDataError(
            f'{where}\'s "content" is a JSON {json_type(content)}; it must be text.'
        )
    if "name" in entry and not isinstance(entry["name"], str):
        raise AgentDataError(f'{where}\'s "name" must be text.')
    if "tool_call_id" in entry and not isinstance(entry["tool_call_id"], str | int):
        raise AgentDataError(f'{where}\'s "tool_call_id" must be a text or a number.')
    if "tool_calls" in entry:
        calls = entry["tool_calls"]
        if not isinstance(calls, list):
            raise AgentDataError(f'{where}\'s "tool_calls" must be a JSON list.')
    return message


def _step(entry: Any, where: str) -> str | dict[str, Any]:
    if isinstance(entry, str):
        return _name(entry, where)
    if isinstance(entry, dict):
        return _call(entry, where)
    raise AgentDataError(
        f"{where} is a JSON {json_type(entry)}, not a tool name or a tool call like "
        f"{_CALL_EXAMPLE}."
    )


def agent_value(field: str, value: Any) -> Any:
    """The decoded JSON `value` checked (and lightly normalised) for agent `field`.

    Raises AgentDataError with a message fit for "row 3, column tool_calls: ...".
    """
    label = LABELS[field]
    if not isinstance(value, list):
        raise AgentDataError(
            f"{label} is a JSON {json_type(value)}; expected {_SHAPES[field]}."
        )
    if len(value) > MAX_ENTRIES:
        raise AgentDataError(
            f"{label} has {len(value):,} entries; at most {MAX_ENTRIES:,} are allowed."
        )
    if field == "conversation":
        return [_message(m, f"Message {i}") for i, m in enumerate(value, start=1)]
    if field == "tool_calls":
        return [_call(c, f"Tool call {i}") for i, c in enumerate(value, start=1)]
    return [_step(s, f"Step {i}") for i, s in enumerate(value, start=1)]


def agent_text(field: str, value: Any) -> str:
    """A text agent field's value: scalars as text, lists and objects refused."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise AgentDataError(
        f"{LABELS[field]} is a JSON {json_type(value)}; it must be text."
    )
