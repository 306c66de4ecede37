"""Shared display filters: `{% load display %}`.

- ``json_tree``: a JSON value (item metadata, a judge's analysis details, tool-call
  arguments) as nested ``<dl>``/``<ol>`` in ``<details>``, not a Python repr. Every key
  and string is escaped; depth, entries per level, string length and the whole tree's
  size are bounded, so a megabyte of metadata still renders a page of sensible size.
- ``usd``: a cost with its currency.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Judge prices are entered per 1,000 tokens in US dollars (what the OpenAI-compatible
# providers quote), so every cost derived from them is in dollars too.
CURRENCY = "USD"

MAX_DEPTH = 6
MAX_ENTRIES = 50
MAX_STRING = 1500
MAX_NODES = 400
# Containers with this many entries or fewer start open.
OPEN_AT_MOST = 8


class _Budget:
    def __init__(self, nodes: int) -> None:
        self.left = nodes

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


def _scalar(value: Any) -> SafeString:
    if value is None:
        return mark_safe('<span class="json-null">null</span>')  # noqa: S308 - a constant
    if isinstance(value, bool):
        return format_html(
            '<span class="json-bool">{}</span>', "true" if value else "false"
        )
    if isinstance(value, int | float | Decimal):
        return format_html('<span class="json-num">{}</span>', value)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > MAX_STRING:
        return format_html(
            '<span class="json-str">{}</span><span class="muted">… ({} more characters)</span>',
            text[:MAX_STRING],
            f"{len(text) - MAX_STRING:,}",
        )
    return format_html('<span class="json-str">{}</span>', text)


def _summary(value: dict[str, Any] | list[Any]) -> str:
    n = len(value)
    if isinstance(value, dict):
        return f"{n} key{'s' if n != 1 else ''}"
    return f"{n} item{'s' if n != 1 else ''}"


def _node(value: Any, depth: int, budget: _Budget) -> SafeString:
    if not isinstance(value, dict | list) or not value:
        if isinstance(value, dict | list):
            return format_html(
                '<span class="muted">{}</span>',
                "{}" if isinstance(value, dict) else "[]",
            )
        return _scalar(value)
    if depth >= MAX_DEPTH:
        return format_html(
            '<span class="muted">{} (nested too deep to show)</span>', _summary(value)
        )
    entries = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    parts: list[SafeString] = []
    shown = 0
    for key, child in entries[:MAX_ENTRIES]:
        if not budget.take():
            break
        shown += 1
        inner = _node(child, depth + 1, budget)
        if isinstance(value, dict):
            parts.append(format_html("<dt>{}</dt><dd>{}</dd>", str(key), inner))
        else:
            parts.append(format_html("<li>{}</li>", inner))
    more = len(entries) - shown
    body = mark_safe("".join(parts))  # noqa: S308 - every part came from format_html
    if isinstance(value, dict):
        block = format_html('<dl class="json-tree">{}</dl>', body)
    else:
        block = format_html('<ol class="json-tree">{}</ol>', body)
    if more:
        block = format_html(
            '{}<p class="muted small">and {} more not shown</p>', block, more
        )
    if depth == 0:
        return block
    return format_html(
        '<details{}><summary class="muted small">{}</summary>{}</details>',
        " open" if len(entries) <= OPEN_AT_MOST else "",
        _summary(value),
        block,
    )


@register.filter
def json_tree(value: Any) -> SafeString:
    """A JSON value as a bounded, escaped tree (a string that holds JSON is parsed)."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= 1_000_000:
            try:
                value = json.loads(stripped)
            except ValueError:
                # JSON text cut short by a page bound: keep its indentation.
                return format_html('<pre class="prompt json-text">{}</pre>', value)
    return format_html(
        '<div class="json-view">{}</div>', _node(value, 0, _Budget(MAX_NODES))
    )


@register.filter
def usd(value: Any) -> str:
    """A cost in US dollars: "$0.0123"; below a hundredth of a cent, "< $0.0001"."""
    if value is None or value == "":
        return ""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(number):
        return ""
    if 0 < number < 0.0001:
        return "< $0.0001"
    return f"${number:,.4f}"


@register.filter
def json_inline(value: Any) -> str:
    """A JSON value on one line for a table cell: a string as itself, anything else as
    compact JSON (never a Python repr such as {'a': True})."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
