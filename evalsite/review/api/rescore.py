"""Review API: the what-if rescore of a run scorer (preview or save)."""

from __future__ import annotations

from typing import Any, cast

from ninja import Router

from evalsite.accounts.selectors import require_rescore_save
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import RunScorer
from evalsite.evals.results import rescore
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.schemas import RescoreIn, RescoreOut

router = Router(tags=["review"])


def _run_scorer_for(run_id: int, payload: RescoreIn) -> RunScorer:
    scorers = RunScorer.objects.filter(run_id=run_id)
    if payload.run_scorer_id is not None:
        run_scorer = scorers.filter(pk=payload.run_scorer_id).first()
        field = "run_scorer_id"
    else:
        # The scorer config the run used (a run scorer id is run_scorer_id: never
        # guessed from scorer_id, whose number may be another scorer's run scorer).
        # RescoreIn's validator requires scorer_id when run_scorer_id is None.
        run_scorer = scorers.filter(scorer_id=cast(int, payload.scorer_id)).first()
        field = "scorer_id"
    if run_scorer is None:
        raise ApplicationError(
            "That scorer is not part of this run.",
            field_errors={field: "not a scorer of this run"},
        )
    return run_scorer


@router.post("/runs/{run_id}/rescore", response=RescoreOut)
def run_rescore(
    request: AuthenticatedHttpRequest, run_id: int, payload: RescoreIn
) -> dict[str, Any]:
    # Even a preview is a POST: reviewers and owners only, like the UI. Saving
    # rewrites everyone's final scores: owners, or reviewers the owner allowed.
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    if payload.save:
        require_rescore_save(membership=run.project.membership)
    preview = rescore.run_rescore(
        run=run,
        run_scorer=_run_scorer_for(run.pk, payload),
        options=payload.options,
        user=request.user,
        save=payload.save,
    )
    return preview.as_dict()
