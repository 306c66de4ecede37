"""Review writes, one module per domain; the public names are re-exported here."""

from __future__ import annotations

from evalsite.review.services.comments import COMMENT_MAX_LENGTH, comment_create
from evalsite.review.services.overrides import (
    FinalFields,
    compute_final,
    override_create,
    override_revert,
    result_accept,
    result_recompute,
    result_set_human_pass,
)
from evalsite.review.services.queues import (
    QUEUE_MAX,
    project_reviewers,
    queue_assign_round_robin,
    queue_create,
    result_flip_field,
    result_undo_last,
)
from evalsite.review.services.rescore import (
    RESCORABLE_OPTIONS,
    RESCORE_CHUNK,
    RescorePreview,
    run_rescore,
)

__all__ = [
    "COMMENT_MAX_LENGTH",
    "FinalFields",
    "QUEUE_MAX",
    "RESCORABLE_OPTIONS",
    "RESCORE_CHUNK",
    "RescorePreview",
    "comment_create",
    "compute_final",
    "override_create",
    "override_revert",
    "project_reviewers",
    "queue_assign_round_robin",
    "queue_create",
    "result_accept",
    "result_flip_field",
    "result_recompute",
    "result_set_human_pass",
    "result_undo_last",
    "run_rescore",
]
