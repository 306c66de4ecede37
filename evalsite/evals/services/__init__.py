"""Services of the evals app (writes): judges, scorers and runs. Judging is the engine's
(evalsite/evals/engine/dispatch.py)."""

from __future__ import annotations

from evalsite.evals.services.judges import (
    JudgeTestResult,
    judge_api_key,
    judge_create,
    judge_create_offline,
    judge_test,
    judge_update,
)
from evalsite.evals.services.runs import (
    RunPreview,
    run_cancel,
    run_delete,
    run_fanout,
    run_finish_if_complete,
    run_preview,
    run_recover,
    run_retry_failed,
    run_start,
)
from evalsite.evals.services.scorers import (
    scorer_create,
    scorer_options_clean,
    scorer_update,
    scorer_version_create,
    scorer_version_create_from_run,
)

__all__ = [
    "JudgeTestResult",
    "RunPreview",
    "judge_api_key",
    "judge_create",
    "judge_create_offline",
    "judge_test",
    "judge_update",
    "run_cancel",
    "run_delete",
    "run_fanout",
    "run_finish_if_complete",
    "run_preview",
    "run_recover",
    "run_retry_failed",
    "run_start",
    "scorer_create",
    "scorer_options_clean",
    "scorer_update",
    "scorer_version_create",
    "scorer_version_create_from_run",
]
