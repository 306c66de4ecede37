"""The judge-side names of `scoring` the app uses, in one place.

TODO(issue 4): A2 appends these names to scoring/__init__.py; until then fall back to
their modules. Drop the fallback once `from scoring import judge_case` works.
"""

from __future__ import annotations

try:
    from scoring import (  # type: ignore[attr-defined]
        JudgeResult,
        StepRecord,
        estimate_tokens,
        judge_case,
        make_client,
        preview_prompts,
    )
except ImportError:  # pragma: no cover - transitional
    from scoring.client import StepRecord
    from scoring.judge import (
        JudgeResult,
        estimate_tokens,
        judge_case,
        make_client,
        preview_prompts,
    )

__all__ = [
    "JudgeResult",
    "StepRecord",
    "estimate_tokens",
    "judge_case",
    "make_client",
    "preview_prompts",
]
