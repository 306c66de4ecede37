"""The item page: the analysis view of one result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoring import KINDS

# What a row of each kind's analysis is about: the first of these keys it has.
_TEXT_KEYS = (
    "claim",
    "statement",
    "opinion",
    "criterion",  # rubric
    "requirement",  # prompt alignment
    "question",  # summarization's coverage
    "dimension",  # noise sensitivity
    "reference_unit",  # answer similarity
    "tool",  # tool call accuracy (judge)
    "name",  # trajectory accuracy (judge)
)


@dataclass
class FieldControl:
    """One overridable value: its path, judge and final values, and the other choices."""

    path: str
    name: str
    judge_value: Any
    final_value: Any
    judge_label: str
    final_label: str
    changed: bool
    choices: list[tuple[str, str]]  # (posted value, label) for values other than final


@dataclass
class AnalysisRow:
    number: int  # 1-based, what the 1–9 keys flip
    text: str
    context_index: int | None
    context_text: str
    reason: str
    fields: list[FieldControl]


@dataclass
class AnalysisView:
    kind: str
    list_key: str  # "verdicts" / "evaluations" / "" (no list)
    rows: list[AnalysisRow]
    scalars: list[FieldControl]
    details: list[
        tuple[str, Any]
    ]  # non-overridable facts (custom score, text-kind numbers)
    missing_context: list[str]


def _posted(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def value_label(labels: dict[str, str], value: Any) -> str:
    """A field's value as a reviewer reads it (the kind's value_labels), else as posted
    ("true" for True): the item page's and the queue's flip keys say the same."""
    key = _posted(value)
    return labels.get(key, key)


def _control(
    kind: str, pattern: str, path: str, judge: Any, final: Any
) -> FieldControl:
    spec = KINDS[kind]
    labels = spec.value_labels.get(pattern, {})
    return FieldControl(
        path=path,
        name=pattern.rsplit(".", 1)[-1],
        judge_value=judge,
        final_value=final,
        judge_label=value_label(labels, judge),
        final_label=value_label(labels, final),
        changed=_posted(judge).strip().lower() != _posted(final).strip().lower(),
        choices=[
            (_posted(v), value_label(labels, v))
            for v in spec.overridable[pattern]
            if _posted(v) != _posted(final).strip().lower()
            and _posted(v) != _posted(final).strip().upper()
        ],
    )


def analysis_view(
    *,
    kind: str,
    analysis: dict[str, Any] | None,
    final_analysis: dict[str, Any] | None,
    context: list[Any],
) -> AnalysisView:
    """The analysis as rows for the item page: per list element its text, reason and
    every overridable field (judge value, final value, the other allowed values)."""
    analysis = analysis or {}
    final = final_analysis or analysis
    spec = KINDS.get(kind)
    view = AnalysisView(
        kind=kind, list_key="", rows=[], scalars=[], details=[], missing_context=[]
    )
    if spec is None:
        view.details = sorted(analysis.items())
        return view
    list_fields: dict[str, list[str]] = {}
    shown: set[str] = set()
    for pattern in spec.overridable:
        parts = pattern.split(".")
        if "*" in parts:
            list_fields.setdefault(parts[0], []).append(pattern)
        else:
            view.scalars.append(
                _control(
                    kind, pattern, pattern, analysis.get(pattern), final.get(pattern)
                )
            )
            shown.add(pattern)
    for head, patterns in list_fields.items():
        view.list_key = head
        shown.add(head)
        judge_list = analysis.get(head) or []
        final_list = final.get(head) or []
        for i, element in enumerate(judge_list):
            final_element = final_list[i] if i < len(final_list) else element
            ci = element.get("context_index")
            chunk = ""
            if isinstance(ci, int) and 0 <= ci < len(context):
                chunk = str(context[ci])
            text = next((str(element[k]) for k in _TEXT_KEYS if k in element), "")
            view.rows.append(
                AnalysisRow(
                    # Numbered across lists (summarization has two), so each of
                    # the 1-9 flip keys names one row.
                    number=len(view.rows) + 1,
                    text=text,
                    context_index=ci if isinstance(ci, int) else None,
                    context_text=chunk,
                    reason=str(element.get("reason") or ""),
                    fields=[
                        _control(
                            kind,
                            pattern,
                            pattern.replace("*", str(i)),
                            element.get(pattern.split(".")[-1]),
                            final_element.get(pattern.split(".")[-1]),
                        )
                        for pattern in patterns
                    ],
                )
            )
    view.missing_context = [str(m) for m in analysis.get("missing_context") or []]
    skip = shown | {"missing_context", "claims", "statements", "opinions", "reason"}
    view.details = [(k, v) for k, v in analysis.items() if k not in skip]
    return view
