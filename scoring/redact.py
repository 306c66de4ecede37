"""Secrets out of error texts: one function for every place an error is stored or shown.

A judge's reply is not ours to show. An endpoint that echoes request headers puts the
``Authorization: Bearer <key>`` it received into its error body, and that body used to
reach every member of a project. Redaction is applied where an error text is
written, and again where a short reason is derived from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
# A reason everyone may read: one line, this long at most.
REASON_CHARS = 200
# The full remote body kept for owners: bounded too (a judge may answer megabytes).
BODY_CHARS = 20_000
# Keys shorter than this are not searched for by value: a 3-letter "key" would redact
# ordinary words. Real keys are far longer; the patterns still catch the usual shapes.
_MIN_SECRET_CHARS = 6

_PATTERNS = (
    # Authorization header values, whatever the token looks like.
    re.compile(r"(?i)\b(Bearer|Basic|Token)\s+[^\s\"',;}\]]+"),
    # Provider-shaped keys: sk-…, pk-…, rk-…, evs_… (OpenAI, Anthropic, Stripe, ours).
    re.compile(r"\b(?:sk|pk|rk|evs)[-_][A-Za-z0-9_\-]{8,}"),
    # "api_key": "…", api-key=…, apikey: …, x-api-key: … (JSON, query strings, headers).
    re.compile(
        r"(?i)\b((?:x[-_])?api[_-]?key)([\"']?\s*[:=]\s*[\"']?|[\"' ]+)"
        r"[^\s\"',;}\]&]+"
    ),
)


def redact_secrets(text: str, *, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with bearer tokens, key-like tokens and each of ``secrets`` (the
    connection's own key, whatever it looks like) replaced by ``[redacted]``."""
    if not text:
        return text
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    text = _PATTERNS[0].sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _PATTERNS[1].sub(REDACTED, text)
    return _PATTERNS[2].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def short_reason(text: str, *, limit: int = REASON_CHARS) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters (an ellipsis
    says when it was cut). Redact before or after: cutting never uncovers a secret."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def body_text(body: Any, fallback: str = "") -> str:
    """A remote reply's body as text (JSON re-serialised, else ``fallback``), bounded."""
    if body is None:
        text = fallback
    elif isinstance(body, str):
        text = body
    else:
        try:
            text = json.dumps(body, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = str(body)
    return text[:BODY_CHARS]


def body_reason(body: Any) -> str | None:
    """What the remote says went wrong, when it says so in the usual places
    (``{"error": {"message": …}}``, ``{"error": "…"}``, ``{"message": …}``,
    ``{"detail": …}``); None otherwise."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict):
        inner = inner.get("message")
    for value in (inner, body.get("message"), body.get("detail")):
        if isinstance(value, str) and value.strip():
            return value
    return None
