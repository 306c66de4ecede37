"""Scorer options: one pydantic model per kind (in the kind's module under
``scoring.kinds``), extra keys forbidden.

``validate_options`` merges the user's options with the kind's defaults (nested
``penalties`` / ``category_scores`` key by key, an explicit 0 honoured) and
returns the full dict; ``options_schema`` exports the JSON Schema the web app
builds its forms from.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from scoring.errors import OptionsError, UnknownKindError
from scoring.judge_options import drop_defaults
from scoring.kinds.base import MAX_SCALE, format_path, options_json_schema
from scoring.registry import OPTIONS_MODELS

__all__ = [
    "MAX_SCALE",
    "OPTIONS_MODELS",
    "check_kind",
    "default_options",
    "options_schema",
    "validate_options",
]


def check_kind(kind: object) -> str:
    """Return ``kind`` if it is known, else raise ``UnknownKindError``."""
    if not isinstance(kind, str) or kind not in OPTIONS_MODELS:
        raise UnknownKindError(kind, tuple(OPTIONS_MODELS))
    return kind


def _message(kind: str, model: type[BaseModel], error: ErrorDetails) -> tuple[str, str]:
    loc = tuple(error["loc"])
    field = format_path(loc)
    if error["type"] == "extra_forbidden":
        parent: type[BaseModel] | None = model
        for part in loc[:-1]:
            annotation = parent.model_fields[str(part)].annotation if parent else None
            parent = (
                annotation
                if isinstance(annotation, type) and issubclass(annotation, BaseModel)
                else None
            )
        allowed = ", ".join(parent.model_fields) if parent else ""
        return field, f"unknown option {field!r} for {kind}; allowed here: {allowed}"
    message = str(error["msg"]).removeprefix("Value error, ")
    message = message.removeprefix("Input should be ")
    if not message.startswith("must"):
        message = f"must be {message}"
    if error["type"] == "missing":
        message = "is required"
    got = repr(error.get("input"))
    if len(got) > 60:
        got = got[:57] + "..."
    return field, f"option {field!r} of {kind} {message} (got {got})"


def validate_options(
    kind: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Validate ``options`` for ``kind``, merge them with the defaults and return the full dict.

    Raises ``UnknownKindError`` or ``OptionsError`` (``.field`` = dotted option name).
    """
    model = OPTIONS_MODELS[check_kind(kind)]
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise OptionsError(f"options of {kind} must be a JSON object", field="")
    try:
        # Judge options at their defaults are left out: options saved before they
        # existed, and scorers that do not use them, stay as they were.
        return drop_defaults(model.model_validate(options).model_dump())
    except ValidationError as exc:
        field, message = _message(kind, model, exc.errors(include_url=False)[0])
        raise OptionsError(message, field=field) from None


def default_options(kind: str) -> dict[str, Any]:
    """The kind's full default options."""
    return validate_options(kind, None)


def options_schema(kind: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the kind's options, nested objects inlined."""
    return options_json_schema(kind, OPTIONS_MODELS[check_kind(kind)])
