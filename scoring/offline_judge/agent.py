"""Deterministic answers to the agent kinds' judge steps (scoring.kinds.agent).

Like ``heuristics``, it reads only the data blocks of the user message, never the
instructions: criteria are met when most of their content words occur in the output (or
the assistant's turns), a tool call is appropriate when its name or arguments share a
word with the request, and a trajectory is compared with the expected steps by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from scoring.offline_judge.heuristics import _content_text, content_words

__all__ = ["AGENT_KINDS", "agent_answer"]

AGENT_KINDS = frozenset(
    {"rubric", "multi_turn_judge", "tool_call_accuracy_llm", "trajectory_accuracy_llm"}
)

_BLOCK = re.compile(
    r"<(input|output|criterion|criterion_text|turn|tool_call|expected_step|available_tools)"
    r'(?: index="(\d+)")?((?: \w+="[^"]*")*)>\n(.*?)\n</\1>',
    re.S,
)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
# Share of a criterion's content words the output must contain for it to be met.
CRITERION_SHARE = 0.5
# Words that say how a criterion is phrased rather than what it asks for.
_META = content_words(
    "assistant agent output response answer reply mentions mention gives give includes "
    "include provides provide states state says say user conversation explains explain "
    "lists list describes describe names name contains contain"
)


def _blocks(
    body: Mapping[str, Any],
) -> list[tuple[str, int | None, dict[str, str], str]]:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            text = _content_text(message.get("content"))
            return [
                (tag, int(index) if index else None, dict(_ATTR.findall(attrs)), data)
                for tag, index, attrs, data in _BLOCK.findall(text)
            ]
    return []


def _single(blocks: list[tuple[str, int | None, dict[str, str], str]], tag: str) -> str:
    for found, _, _, data in blocks:
        if found == tag:
            return "" if data.startswith("(no ") or data == "(not given)" else data
    return ""


def _met(criterion: str, text: str) -> tuple[bool, str]:
    wanted = content_words(criterion) - _META
    if not wanted:
        return True, "The criterion names nothing specific to look for."
    found = wanted & content_words(text)
    share = len(found) / len(wanted)
    if share >= CRITERION_SHARE:
        return True, f"{len(found)} of its {len(wanted)} key words are present."
    missing = ", ".join(sorted(wanted - found)[:3])
    return False, f"Missing: {missing}."


def _tool_name(data: str) -> str:
    first = data.split("\n", 1)[0]
    return first.removeprefix("tool: ").strip()


def _tool_words(data: str) -> set[str]:
    name = _tool_name(data)
    spaced = (
        re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    )
    words = content_words(spaced)
    for line in data.split("\n")[1:]:
        if line.startswith("arguments: "):
            try:
                arguments = json.loads(line.removeprefix("arguments: "))
            except ValueError:
                continue
            values = arguments.values() if isinstance(arguments, dict) else [arguments]
            for value in values:
                words |= content_words(str(value))
    return words


def agent_answer(step: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The reply object for an agent kind's step; KeyError for an unknown one."""
    kind, _, name = step.partition("__")
    blocks = _blocks(body)
    output = _single(blocks, "output")
    request = _single(blocks, "input")
    if (kind, name) == ("rubric", "criteria"):
        criteria = []
        for tag, index, _, data in blocks:
            if tag == "criterion" and index is not None:
                met, reason = _met(data, output)
                criteria.append({"number": index, "satisfied": met, "reason": reason})
        unmet = sum(1 for c in criteria if not c["satisfied"])
        return {
            "criteria": criteria,
            "overall_assessment": f"{len(criteria) - unmet} of {len(criteria)} criteria met.",
        }
    if (kind, name) == ("multi_turn_judge", "conversation_verdict"):
        said = " ".join(
            data
            for tag, _, attrs, data in blocks
            if tag == "turn" and attrs.get("role") == "assistant"
        )
        met, reason = _met(_single(blocks, "criterion_text"), said)
        return {"satisfied": met, "reason": f"Across the assistant's turns: {reason}"}
    calls = [data for tag, _, _, data in blocks if tag == "tool_call"]
    asked = content_words(request)
    if (kind, name) == ("tool_call_accuracy_llm", "tool_evaluations"):
        evaluations = []
        for data in calls:
            shared = _tool_words(data) & asked
            evaluations.append(
                {
                    "tool": _tool_name(data),
                    "appropriate": bool(shared),
                    "reason": (
                        f"It serves the request ({', '.join(sorted(shared)[:3])})."
                        if shared
                        else "Nothing in the request asks for it."
                    ),
                }
            )
        missing: list[str] = []
        if not calls:
            for line in _single(blocks, "available_tools").split("\n"):
                tool = line.partition(":")[0].strip()
                if tool and _tool_words(f"tool: {tool}") & asked:
                    missing.append(tool)
        good = sum(1 for e in evaluations if e["appropriate"])
        return {
            "evaluations": evaluations,
            "missing_tools": missing,
            "overall_assessment": f"{good} of {len(evaluations)} calls serve the request.",
        }
    if (kind, name) == ("trajectory_accuracy_llm", "trajectory_steps"):
        names = [_tool_name(data) for data in calls]
        expected = [_tool_name(d) for tag, _, _, d in blocks if tag == "expected_step"]
        steps = []
        position = 0  # next expected step to match, in order
        for index, (tool, data) in enumerate(zip(names, calls, strict=True)):
            repeat = index > 0 and calls[index - 1] == data
            if expected:
                necessary = tool in expected and not repeat
                in_order = position < len(expected) and expected[position] == tool
                if in_order:
                    position += 1
            else:
                necessary = not repeat
                in_order = True
            steps.append(
                {
                    "name": tool,
                    "necessary": necessary,
                    "in_order": in_order,
                    "reason": "A repeat of the previous call."
                    if repeat
                    else (
                        "An expected step."
                        if necessary and expected
                        else "Not among the expected steps."
                        if expected
                        else "Serves the task."
                    ),
                }
            )
        missing_steps = [e for e in expected if e not in names]
        extra = [n for n in names if expected and n not in expected]
        extra += [
            str(s["name"]) for s in steps if str(s["reason"]).startswith("A repeat")
        ]
        return {
            "steps": steps,
            "missing_steps": missing_steps,
            "extra_steps": extra,
            "overall_assessment": (
                f"{sum(1 for s in steps if s['necessary'])} of {len(steps)} steps were needed; "
                f"{len(missing_steps)} missing."
            ),
        }
    raise KeyError(step)
