"""The first entries of a long mapping or list, for a page: `{% bounded d 20 as b %}`.

A dataset may have up to parsing.limits.MAX_COLUMNS columns and an item as many
metadata keys; a page shows the first few of each and says how many more there are, so
that a page of 25 items stays a page (500 keys each made it megabytes of HTML).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import template

register = template.Library()

# What a page shows of an item's metadata, of a dataset's columns and of a preview's.
METADATA_KEYS = 20
COLUMNS = 50


@dataclass(frozen=True)
class Bounded:
    shown: list[Any]
    more: int


def bound(value: Any, limit: int) -> Bounded:
    """The first `limit` entries of `value` (a dict's items, or a list's elements)."""
    if not value:
        return Bounded(shown=[], more=0)
    entries = list(value.items()) if isinstance(value, dict) else list(value)
    return Bounded(shown=entries[:limit], more=max(0, len(entries) - limit))


@register.simple_tag
def bounded(value: Any, limit: int = METADATA_KEYS) -> Bounded:
    return bound(value, limit)
