"""What every importer yields, and the helpers they share. No Django in here.

An importer reads another tool's file and yields `ImportedRow`s (one dataset item each,
with the judge's verdict when the file carries one) or `Problem`s in place of rows it
cannot read, and fills an `ImportSummary` as it goes: counts, the warnings a user should
read before importing, and the tool's own facts (version, eval id).
"""

from __future__ import annotations

import ast
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from evalsite.datasets.agentdata import AgentDataError, agent_value
from evalsite.datasets.parsing.limits import Limits, Problem
from evalsite.datasets.parsing.text import as_text

Tool = Literal["promptfoo", "langfuse", "langsmith"]
TOOLS: tuple[Tool, ...] = ("promptfoo", "langfuse", "langsmith")
TOOL_LABELS: dict[str, str] = {
    "promptfoo": "promptfoo results (promptfoo eval -o results.json or results.jsonl)",
    "langfuse": "Langfuse dataset items (CSV, JSON or JSONL export)",
    "langsmith": "LangSmith dataset examples or experiment results (CSV, JSON or JSONL)",
}

# Keys whose value is taken as the item's input, best first (compared case-insensitively).
INPUT_KEYS = ("input", "question", "query", "prompt", "user_input", "text")
# Keys of an expected/produced output object taken as its text, best first.
OUTPUT_KEYS = (
    "output",
    "answer",
    "expected_output",
    "expected",
    "response",
    "reference",
    "completion",
    "result",
    "text",
    "content",
)
# How many rows the preview shows.
PREVIEW_ROWS = 10


@dataclass(frozen=True)
class Grade:
    """One check the tool recorded on one item, as a result of the scorer `scorer`
    (kind `kind`: "factuality", or "imported" for the tool's own pass, score and
    reason), in scoring's analysis shape.

    `error` instead of an analysis when the tool recorded an error or could not read
    its grader's reply (the result is imported as an error). `inferred` when the tool
    did not record the factuality category and the importer chose one that scores and
    passes as the tool's grade did.
    """

    scorer: str
    kind: str
    options: dict[str, Any]
    analysis: dict[str, Any] | None
    reason: str = ""
    error: str = ""
    inferred: bool = False


@dataclass
class ImportedRow:
    index: int
    input: str
    output: str
    reference: str = ""
    context: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    system_prompt: str = ""
    conversation: list[dict[str, Any]] | None = None
    # The run this item's grades go to (promptfoo: one per prompt x provider); its
    # items become one dataset version.
    group: str = ""
    grades: list[Grade] = field(default_factory=list)

    def as_item(self) -> dict[str, Any]:
        """The row as a JSON Lines record for datasets.services.dataset_create."""
        out: dict[str, Any] = {
            "input": self.input,
            "output": self.output,
            "context": self.context,
            "reference": self.reference,
            "metadata": self.metadata,
        }
        if self.system_prompt:
            out["system_prompt"] = self.system_prompt
        if self.conversation is not None:
            out["conversation"] = self.conversation
        return out


@dataclass
class ImportSummary:
    tool: str
    file_format: str = "json"
    rows: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    # Grades: how many passed, failed and were errors; categories by letter.
    verdicts: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)
    # Other assertion types (promptfoo), kept in the items' metadata: type -> count.
    other_assertions: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    # Counted warnings, written out once at the end: key -> (count, message template).
    _counted: dict[str, list[Any]] = field(default_factory=dict)
    # The vars (promptfoo) or input keys seen, for the input choice.
    input_choices: list[str] = field(default_factory=list)
    input_source: str = ""
    scorer: str = ""
    # The groups (runs) in the order met: promptfoo's "<provider> · <prompt>".
    groups: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def count(self, key: str, template: str) -> None:
        """Count one occurrence of a warning; `template` has {n} for the count."""
        entry = self._counted.setdefault(key, [0, template])
        entry[0] += 1

    def finish(self) -> None:
        for n, template in self._counted.values():
            self.warn(template.format(n=n, s="" if n == 1 else "s"))
        self._counted.clear()

    @property
    def verdict_total(self) -> int:
        return sum(self.verdicts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "file_format": self.file_format,
            "rows": self.rows,
            "details": self.details,
            "input_source": self.input_source,
            "input_choices": self.input_choices,
            "scorer": self.scorer,
            "groups": list(self.groups),
            "verdicts": dict(self.verdicts),
            "categories": dict(sorted(self.categories.items())),
            "other_assertions": dict(sorted(self.other_assertions.items())),
            "warnings": list(self.warnings),
        }


class ImportFailed(Exception):
    """The file cannot be imported at all (unknown format or version)."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or [Problem(message)]


def pick_key(value: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of `keys` (case-insensitive) that `value` has, else its only key."""
    lower = {k.lower(): k for k in value}
    for key in keys:
        if key in lower:
            return lower[key]
    if len(value) == 1:
        return next(iter(value))
    return None


def decode_cell(value: Any, limits: Limits, *, python_literals: bool = False) -> Any:
    """A CSV cell that holds JSON (an exported object, a quoted date) decoded; any other
    text as it is. Deeper than the nesting limit stays text.

    `python_literals`: a dict or list cell that is not JSON is also read as Python's
    repr of one (what pandas' to_csv writes for a dict or list: single quotes, None,
    True), when it holds nothing but JSON's types."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in '{["':
        return value
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        if not python_literals or text[0] not in "{[":
            return value
        try:
            decoded = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return value
        if not _json_like(decoded, limits.max_nesting + 1):
            return value
    if _depth(decoded, limits.max_nesting + 1) > limits.max_nesting:
        return value
    return decoded


def _json_like(value: Any, stop: int, level: int = 0) -> bool:
    """Whether a Python literal holds only what JSON can (dicts with string keys,
    lists, strings, finite numbers, booleans, None), within `stop` levels."""
    if level > stop:
        return False
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and _json_like(v, stop, level + 1)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return all(_json_like(v, stop, level + 1) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (str, int, bool))


def _depth(value: Any, stop: int, level: int = 0) -> int:
    if level >= stop:
        return level
    if isinstance(value, dict):
        return max([_depth(v, stop, level + 1) for v in value.values()] or [level + 1])
    if isinstance(value, list):
        return max([_depth(v, stop, level + 1) for v in value] or [level + 1])
    return level


@dataclass(frozen=True)
class Split:
    """A tool's structured value split into item text and what stays in metadata."""

    text: str
    conversation: list[dict[str, Any]] | None = None
    system_prompt: str = ""
    rest: Any = None  # the original value when only a part of it became the text


def split_input(value: Any) -> Split:
    """An input value (string, object, or chat messages) as item fields.

    Chat messages (a list of {"role", "content"} or an object holding one under
    "messages") become the item's conversation: the input is the last user message and a
    system message becomes the system prompt. An object gives its input-like key (or its
    only key); anything else is kept whole as JSON text.
    """
    if isinstance(value, dict):
        messages = value.get("messages")
        if isinstance(messages, list):
            chat = _chat(messages)
            if chat is not None:
                others = {k: v for k, v in value.items() if k != "messages"}
                return Split(
                    text=chat.text,
                    conversation=chat.conversation,
                    system_prompt=chat.system_prompt,
                    rest=others or None,
                )
        key = pick_key(value, INPUT_KEYS)
        if key is not None and isinstance(value[key], (str, int, float)):
            rest = value if len(value) > 1 else None
            return Split(text=as_text(value[key]), rest=rest)
        return Split(text=as_text(value))
    if isinstance(value, list):
        chat = _chat(value)
        if chat is not None:
            return chat
    return Split(text=as_text(value))


def split_output(value: Any) -> Split:
    """An output value (expected or produced) as text: an object's output-like key, an
    assistant message's content, or the value as JSON."""
    if isinstance(value, dict):
        messages = value.get("messages")
        if isinstance(messages, list) and messages:
            last = messages[-1]
            if isinstance(last, dict) and isinstance(last.get("content"), str):
                return Split(text=last["content"], rest=value)
        if isinstance(value.get("content"), str) and "role" in value:
            return Split(text=value["content"], rest=value if len(value) > 2 else None)
        key = pick_key(value, OUTPUT_KEYS)
        if key is not None and isinstance(value[key], (str, int, float)):
            return Split(
                text=as_text(value[key]), rest=value if len(value) > 1 else None
            )
    return Split(text=as_text(value))


def _chat(messages: list[Any]) -> Split | None:
    """Messages in the shape datasets.agentdata accepts, else None (kept as JSON)."""
    if not messages or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    ):
        return None
    try:
        conversation = agent_value("conversation", messages)
    except AgentDataError:
        return None
    system = [m.get("content") or "" for m in conversation if m.get("role") == "system"]
    users = [m.get("content") or "" for m in conversation if m.get("role") == "user"]
    text = users[-1] if users else as_text(messages)
    return Split(
        text=text if isinstance(text, str) else as_text(text),
        conversation=conversation,
        system_prompt="\n\n".join(s for s in system if isinstance(s, str)),
    )
