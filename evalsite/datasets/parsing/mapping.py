"""Which file column feeds which item field, and one read row mapped to an item.

`Mapping` is the user's choice (validated from a form or the API), `suggest_mapping`
the default offered, `map_row` one row as a `ParsedRow`: input and output as text, the
context as a list of strings, the agent fields checked for their shapes by agentdata,
every other column into metadata. No Django in here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from evalsite.datasets.agentdata import (
    AGENT_FIELDS,
    JSON_FIELDS,
    LABELS,
    AgentDataError,
    agent_text,
    agent_value,
    shape_of,
)
from evalsite.datasets.parsing.jsonfile import loads
from evalsite.datasets.parsing.jsonscan import nesting_overflow
from evalsite.datasets.parsing.limits import (
    MAX_COLUMNS,
    Limits,
    ParseError,
    Problem,
    RawRow,
    too_deep,
    too_many_keys,
    unstorable,
)
from evalsite.datasets.parsing.text import as_text, json_type
from evalsite.lib.text import unstorable_char, unstorable_in

ContextFormat = Literal["json", "delimited"]

# Column names suggested for each field, best first (compared case-insensitively).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "input": ("input", "question", "query", "prompt", "user_input"),
    "output": (
        "output",
        "answer",
        "response",
        "actual_output",
        "completion",
        "model_output",
    ),
    "context": (
        "context",
        "contexts",
        "context_chunks",
        "retrieval_context",
        "retrieved_context",
        "retrieved_contexts",
        "retrieved",
        "retrieved_documents",
        "documents",
        "docs",
        "chunks",
        "passages",
    ),
    "reference": (
        "reference",
        "expected_output",
        "expected",
        "ground_truth",
        "reference_answer",
        "ideal",
    ),
    # Agent data: only the fields' own names, so that a column such as "messages" or
    # DeepEval's "tools_called" (calls of another shape) stays metadata unless mapped.
    "system_prompt": ("system_prompt",),
    "conversation": ("conversation",),
    "tool_calls": ("tool_calls",),
    "expected_tool_calls": ("expected_tool_calls",),
    "expected_trajectory": ("expected_trajectory",),
    "baseline_output": ("baseline_output",),
}
# Every item field a column can be mapped to, in the order messages list them.
TARGETS = ("input", "output", "context", "reference", *AGENT_FIELDS)
# Parts of a column name that say "retrieved text" when no synonym matched exactly
# ("context_chunks_v2", "top_k_passages").
_CONTEXT_NAME_PARTS = ("context", "chunk", "passage", "retriev", "document")
# Longer text values are cut in the preview (it shows 160 characters of a cell). A
# cut JSON list no longer parses, so one that starts like a list of strings and
# reaches this length counts as one when the context is guessed.
PREVIEW_CELL_CHARS = 2000
# Names another field claims: never guessed as the context from their content.
_SYNONYMS_OF_OTHERS = frozenset(
    name for target, names in _SYNONYMS.items() if target != "context" for name in names
)


@dataclass(frozen=True)
class Mapping:
    """Which file column feeds which item field; every other column goes to metadata."""

    input: str
    output: str
    context: str | None = None
    reference: str | None = None
    context_format: ContextFormat = "json"
    context_delimiter: str = "\n"
    # Agent data (see agentdata): a column each, or None.
    system_prompt: str | None = None
    conversation: str | None = None
    tool_calls: str | None = None
    expected_tool_calls: str | None = None
    expected_trajectory: str | None = None
    baseline_output: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "context": self.context,
            "reference": self.reference,
            "context_format": self.context_format,
            "context_delimiter": self.context_delimiter,
            **{key: getattr(self, key) for key in AGENT_FIELDS},
        }

    @property
    def mapped_columns(self) -> set[str]:
        return {c for c in (getattr(self, t) for t in TARGETS) if c}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Mapping:
        """Validate a user-given mapping (form or API JSON). Raises ParseError."""
        if not isinstance(data, dict):
            raise ParseError(
                "The mapping must be a JSON object like "
                '{"input": "question", "output": "answer"}.'
            )
        allowed = {*TARGETS, "context_format", "context_delimiter"}
        unknown = sorted(set(data) - allowed)
        problems = [
            Problem(
                f"Unknown mapping key {key!r}; allowed: {', '.join(sorted(allowed))}.",
                column=key,
            )
            for key in unknown
        ]
        values: dict[str, Any] = {}
        for key in TARGETS:
            value = data.get(key)
            if value in (None, ""):
                values[key] = None
            elif isinstance(value, str):
                values[key] = value
            else:
                problems.append(
                    Problem(f"The {key} mapping must be a column name.", column=key)
                )
        # The mapping is stored with the dataset: refuse what the database would.
        for key in (*values, "context_delimiter"):
            value = data.get(key)
            found = unstorable_char(value) if isinstance(value, str) else None
            if found:
                problems.append(
                    Problem(f"Contains {found}, which cannot be stored.", column=key)
                )
        for key in ("input", "output"):
            if key in values and values[key] is None:
                problems.append(
                    Problem(f"Choose the column that holds the {key}.", column=key)
                )
        raw_format = data.get("context_format") or "json"
        context_format: ContextFormat = (
            "delimited" if raw_format == "delimited" else "json"
        )
        if raw_format not in ("json", "delimited"):
            problems.append(
                Problem(
                    'context_format must be "json" or "delimited".',
                    column="context_format",
                )
            )
        delimiter = data.get("context_delimiter")
        if delimiter in (None, ""):
            delimiter = "\n"
        if not isinstance(delimiter, str):
            problems.append(
                Problem("context_delimiter must be text.", column="context_delimiter")
            )
        elif context_format == "delimited" and not delimiter.strip(" "):
            problems.append(
                Problem(
                    "context_delimiter cannot be only spaces.",
                    column="context_delimiter",
                )
            )
        if problems:
            raise ParseError(problems[0].message, problems)
        return cls(
            input=values["input"],
            output=values["output"],
            context=values["context"],
            reference=values["reference"],
            context_format=context_format,
            context_delimiter=unescape_delimiter(delimiter),
            **{key: values[key] for key in AGENT_FIELDS},
        )


def unescape_delimiter(value: str) -> str:
    r"""Let users type `\n` or `\t` in a one-line form field."""
    return value.replace("\\n", "\n").replace("\\t", "\t")


def escape_delimiter(value: str) -> str:
    return value.replace("\n", "\\n").replace("\t", "\\t")


@dataclass
class ParsedRow:
    """One item ready to store. `index` is the 0-based position among the items."""

    index: int
    input: str
    output: str
    context: list[str]
    reference: str
    metadata: dict[str, Any]
    # The row's size in the file, in characters: the services batch inserts by it.
    chars: int = field(default=0, compare=False)
    # Agent data: "" / None when the row has none (None, not [], so that "no expected
    # tool calls given" differs from "expected to call no tool").
    system_prompt: str = ""
    conversation: list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    expected_tool_calls: list[Any] | None = None
    expected_trajectory: list[Any] | None = None
    baseline_output: str = ""


def suggest_mapping(
    columns: list[str], rows: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A default mapping: exact names first, then common synonyms (case-insensitive).

    The context column, when no synonym names it, is the first free column whose
    name has a part such as "context" or "chunk", else the first whose cells are
    all JSON lists of strings (an agent field's own name never counts: its lists
    are tool names, not retrieved text)."""
    by_lower: dict[str, str] = {}
    for name in columns:
        by_lower.setdefault(name.lower().strip(), name)
    mapping: dict[str, Any] = {}
    used: set[str] = set()
    for target, names in _SYNONYMS.items():
        mapping[target] = None
        for candidate in names:
            column = by_lower.get(candidate)
            if column is not None and column not in used:
                mapping[target] = column
                used.add(column)
                break
    if mapping["context"] is None:
        mapping["context"] = _context_guess(columns, rows or [], used)
    mapping["context_format"] = "json"
    mapping["context_delimiter"] = "\n"
    context = mapping["context"]
    if context and rows:
        present = [r.get(context) for r in rows if r.get(context) not in (None, "")]
        sample = [v for v in present if isinstance(v, str)]
        if (
            sample
            and len(sample) == len(present)
            and not any(v.lstrip().startswith("[") for v in sample)
        ):
            mapping["context_format"] = "delimited"
            if all("||" in v for v in sample):
                mapping["context_delimiter"] = "||"
            elif any("\n\n" in v for v in sample):
                mapping["context_delimiter"] = "\n\n"
    return mapping


def _context_guess(
    columns: list[str], rows: list[dict[str, Any]], used: set[str]
) -> str | None:
    free = [
        c
        for c in columns
        if c not in used and c.lower().strip() not in _SYNONYMS_OF_OTHERS
    ]
    for column in free:
        lowered = column.lower()
        if any(part in lowered for part in _CONTEXT_NAME_PARTS):
            return column
    for column in free:
        present = [r.get(column) for r in rows if r.get(column) not in (None, "")]
        if present and all(_is_string_list(v) for v in present):
            return column
    return None


def _is_string_list(value: Any) -> bool:
    """A list of strings, or a cell holding one as JSON text (CSV)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("["):
            return False
        try:
            value = json.loads(text)
        except ValueError:
            # Cut by the preview: judge by how it starts.
            return len(value) >= PREVIEW_CELL_CHARS and text[1:].lstrip().startswith(
                '"'
            )
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, str) for v in value)
    )


def mapping_carry_over(
    previous: dict[str, Any],
    previous_columns: list[str],
    columns: list[str],
    suggested: dict[str, Any],
) -> dict[str, Any]:
    """A new version's starting mapping: the previous version's choice for every
    field whose column the new file still has; for the rest, the suggestion, unless
    the previous file had the suggested column too and it was left unmapped then
    (the user's "none" stands). The context format goes with the context column."""
    present = set(columns)
    had = set(previous_columns)
    carried: dict[str, Any] = {}
    for target in TARGETS:
        before = previous.get(target)
        if isinstance(before, str) and before in present:
            carried[target] = before
    for target in TARGETS:
        if target in carried:
            continue
        guess = suggested.get(target)
        left_unmapped = guess in had and not previous.get(target)
        taken = guess in carried.values()
        carried[target] = None if (not guess or left_unmapped or taken) else guess
    source = previous if carried["context"] == previous.get("context") else suggested
    carried["context_format"] = source.get("context_format") or "json"
    carried["context_delimiter"] = source.get("context_delimiter") or "\n"
    return carried


def _context_list(
    value: Any, mapping: Mapping, row: RawRow, limits: Limits
) -> tuple[list[str] | None, Problem | None]:
    column = mapping.context

    def problem(message: str) -> tuple[None, Problem]:
        return None, Problem(message, row=row.row, column=column, line=row.line)

    if value is None or value == "":
        return [], None
    if mapping.context_format == "delimited" and isinstance(value, str):
        chunks = [c.strip() for c in value.split(mapping.context_delimiter)]
        return [c for c in chunks if c], None
    if isinstance(value, str):
        # The cell is one level inside its row, as a JSON row's list would be.
        if nesting_overflow(value, limits.max_nesting - 1) is not None:
            return problem(too_deep(limits))
        try:
            value = loads(value)
        except json.JSONDecodeError as exc:
            return problem(
                f"Context is not valid JSON ({exc.msg}); expected a JSON list of strings "
                'like ["chunk one", "chunk two"], or choose the "delimited" context format.'
            )
        except ValueError as exc:
            return problem(f"Context is not valid JSON: {exc}")
        # Escapes in the text decode to new characters: the rule applies to them too.
        found = unstorable_in(value, max_depth=limits.max_nesting + 1)
        if found:
            return problem(unstorable(found))
    if not isinstance(value, list):
        return None, Problem(
            f"Context is a JSON {json_type(value)}, not a list of strings.",
            row=row.row,
            column=column,
            line=row.line,
        )
    for position, chunk in enumerate(value, start=1):
        if not isinstance(chunk, str):
            return None, Problem(
                f"Context element {position} is a JSON {json_type(chunk)}, not a string.",
                row=row.row,
                column=column,
                line=row.line,
            )
    return value, None


def _agent_field(
    target: str, value: Any, column: str, row: RawRow, limits: Limits
) -> tuple[Any, Problem | None]:
    """One agent column of a row: text, or JSON (a cell's text is decoded first, as
    context is) checked for its shape by agentdata. Empty: "" or None."""

    def problem(message: str) -> tuple[None, Problem]:
        return None, Problem(message, row=row.row, column=column, line=row.line)

    try:
        if target not in JSON_FIELDS:
            return agent_text(target, value), None
        if value is None or value == "":
            return None, None
        if isinstance(value, str):
            if nesting_overflow(value, limits.max_nesting - 1) is not None:
                return problem(too_deep(limits))
            try:
                value = loads(value)
            except json.JSONDecodeError as exc:
                return problem(
                    f"{LABELS[target]} is not valid JSON ({exc.msg}, at character "
                    f"{exc.pos + 1}); expected {shape_of(target)}."
                )
            except ValueError as exc:
                return problem(f"{LABELS[target]} is not valid JSON: {exc}")
            found = unstorable_in(value, max_depth=limits.max_nesting + 1)
            if found:
                return problem(unstorable(found))
        return agent_value(target, value), None
    except AgentDataError as exc:
        return problem(str(exc))


def map_row(
    raw: RawRow, mapping: Mapping, index: int, limits: Limits | None = None
) -> tuple[ParsedRow | None, list[Problem]]:
    values = raw.values
    problems = []
    for target in ("input", "output"):
        column = getattr(mapping, target)
        if column not in values:
            problems.append(
                Problem(
                    f"The {target} column {column!r} is missing from this row.",
                    row=raw.row,
                    column=column,
                    line=raw.line,
                )
            )
    context: list[str] | None = []
    if mapping.context:
        context, problem = _context_list(
            values.get(mapping.context), mapping, raw, limits or Limits()
        )
        if problem:
            problems.append(problem)
    agent: dict[str, Any] = {}
    for target in AGENT_FIELDS:
        column = getattr(mapping, target)
        if column:
            agent[target], problem = _agent_field(
                target, values.get(column), column, raw, limits or Limits()
            )
            if problem:
                problems.append(problem)
    if problems:
        return None, problems
    metadata: dict[str, Any] = {}
    mapped = mapping.mapped_columns
    nested = values.get("metadata")
    if "metadata" not in mapped and isinstance(nested, dict):
        # A JSON row's own "metadata" object is the metadata, not one key of it.
        metadata.update(nested)
    for key, value in values.items():
        if key in mapped or (key == "metadata" and isinstance(nested, dict)):
            continue
        metadata[key] = value
    if len(metadata) > MAX_COLUMNS:
        message = too_many_keys(raw.row, len(metadata), "metadata keys")
        return None, [Problem(message, row=raw.row, column="metadata", line=raw.line)]
    return (
        ParsedRow(
            index=index,
            input=as_text(values.get(mapping.input)),
            output=as_text(values.get(mapping.output)),
            context=context or [],
            reference=as_text(values.get(mapping.reference))
            if mapping.reference
            else "",
            metadata=metadata,
            chars=raw.chars,
            **{k: v for k, v in agent.items() if v is not None},
        ),
        [],
    )


def check_columns_exist(mapping: Mapping, columns: list[str], *, header: bool) -> None:
    if not header and len(columns) >= MAX_COLUMNS:
        return
    present = set(columns)
    problems = []
    for target in TARGETS:
        column = getattr(mapping, target)
        if column and column not in present:
            where = "in the CSV header" if header else "in any row"
            problems.append(
                Problem(
                    f"The {target} column {column!r} is not {where}. "
                    f"Columns found: {', '.join(columns) or 'none'}.",
                    column=column,
                )
            )
    if problems:
        kind = "CSV" if header else "file"
        raise ParseError(
            f"The {kind} has no column {problems[0].column!r} (mapped to "
            f"{_target_of(mapping, problems[0].column)}).",
            problems,
        )


def _target_of(mapping: Mapping, column: str | None) -> str:
    for target in TARGETS:
        if getattr(mapping, target) == column:
            return target
    return "?"
