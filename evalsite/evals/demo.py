from __future__ import annotations

from typing import IO, Any


def demo_load(
    *, project: Any, user: Any, with_run: bool = True, stdout: IO[str] | None = None
) -> None:
    """Load the demo dataset and a finished run into the demo project (issue 4 fills this in)."""
