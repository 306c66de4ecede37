"""Time a reviewer spent on an item or a pair, as the browser measured it."""

from __future__ import annotations

import math
from typing import Any

# Anything longer is a reviewer who left the tab open, not time spent, so it is
# capped rather than trusted.
MAX_SECONDS = 3600.0


def clean_seconds(seconds: Any) -> float | None:
    """The seconds a form or API sent, as a number in [0, MAX_SECONDS], or None
    when absent or not a finite non-negative number."""
    if seconds is None or seconds == "" or isinstance(seconds, bool):
        return None
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return min(value, MAX_SECONDS)
