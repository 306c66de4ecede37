"""Analysis validation: each kind's analysis shape (SCORERS.md) is a pydantic model in
the kind's module under ``scoring.kinds``.

The judge's JSON, or a reviewer-edited analysis, is validated here before any
score is computed: enum values are trimmed and lower-cased (the factuality
category upper-cased) before they are checked, and every error names its path
(``verdicts[2].verdict``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from scoring.errors import AnalysisError, UnknownKindError
from scoring.kinds.base import format_path
from scoring.registry import ANALYSIS_MODELS

__all__ = [
    "ANALYSIS_MODELS",
    "format_path",
    "parse_factuality_reply",
    "validate_analysis",
]


def _describe(error: ErrorDetails) -> str:
    """A short human sentence for one pydantic error."""
    kind = error["type"]
    message = str(error["msg"])
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        expected = message.removeprefix("Input should be ")
        return f"must be {expected} (got {error['input']!r})"
    message = message.removeprefix("Value error, ")
    message = message.removeprefix("Input should be ").removeprefix("input should be ")
    if not message.startswith("must"):
        message = f"must be {message}"
    return f"{message} (got {error['input']!r})"


def validate_analysis(kind: str, analysis: dict[str, Any]) -> dict[str, Any]:
    """Validate an analysis against the kind's shape and return it normalised.

    Raises ``UnknownKindError`` for an unknown kind and ``AnalysisError`` (with
    ``.path``) for the first problem found.
    """
    try:
        model = ANALYSIS_MODELS[kind]
    except (KeyError, TypeError):
        raise UnknownKindError(kind, tuple(ANALYSIS_MODELS)) from None
    if not isinstance(analysis, dict):
        raise AnalysisError(
            f"{kind} analysis must be a JSON object, got {type(analysis).__name__}",
            path="",
        )
    try:
        validated = model.model_validate(analysis)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        path = format_path(error["loc"])
        raise AnalysisError(
            f"{kind} analysis, {path or 'top level'}: {_describe(error)}", path=path
        ) from None
    return validated.model_dump()


_LONE_LETTER = re.compile(r"^(?:\(([A-E])\)|([A-E])\)?)[.:,]?$", re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object inside ``text`` (a judge may write a sentence before it)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_factuality_reply(text: str) -> dict[str, Any]:
    """Parse a factuality judge reply into ``{"category", "reason"}``.

    Accepted (SCORERS.md): a JSON object with ``category`` (trimmed,
    upper-cased, A-E) and ``reason`` (a Markdown code fence around it is
    tolerated, and so is text before or after it, as promptfoo reads it); otherwise a reply
    whose first non-blank token is a lone letter
    A-E, optionally in parentheses and optionally followed by ``.``, ``:`` or
    ``,`` (``(C) because…``, ``C``, ``c) same``, ``B. more detail``). Anything
    else (``F``, ``{"category": "(A)"}``, prose) raises ``AnalysisError``: a
    parse error, never a silent fail.
    """
    if not isinstance(text, str):
        raise AnalysisError("factuality reply must be text", path="")
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced is not None:
        stripped = fenced.group(1)
    if stripped.startswith("{"):
        try:  # the reply's opening object; the judge's text after it is ignored
            data, _ = json.JSONDecoder().raw_decode(stripped)
        except ValueError:
            raise AnalysisError("factuality reply is not valid JSON", path="") from None
        if not isinstance(data, dict):
            raise AnalysisError("factuality reply must be a JSON object", path="")
        return validate_analysis("factuality", data)
    embedded = _first_json_object(stripped)
    if embedded is not None and "category" in embedded:
        return validate_analysis("factuality", embedded)
    parts = stripped.split(maxsplit=1)
    match = _LONE_LETTER.match(parts[0]) if parts else None
    if match is None:
        raise AnalysisError(
            "factuality reply has neither a JSON object with a category nor a "
            f"leading lone letter A-E (starts with {stripped[:40]!r})",
            path="category",
        )
    letter = match.group(1) or match.group(2)
    reason = parts[1].strip() if len(parts) > 1 else ""
    return {"category": letter.upper(), "reason": reason}
