"""Plain data types passed into the scoring library."""

from __future__ import annotations

from typing import Any, TypedDict


class Case(TypedDict, total=False):
    """One item to score.

    ``context`` holds the retrieved chunks in order; ``reference`` is the ideal
    answer (needed by factuality, optional elsewhere); ``metadata`` is carried
    along untouched.
    """

    input: str
    output: str
    context: list[str]
    reference: str | None
    metadata: dict[str, Any]
