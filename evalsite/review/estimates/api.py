"""Review API: a run's corrected figures and its calibration samples."""

from __future__ import annotations

from django.http import Http404
from ninja import Router, Status

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import RunScorer
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.estimates.schemas import (
    CalibrationSampleIn,
    CalibrationSampleOut,
    ScorerEstimatesOut,
)
from evalsite.review.estimates.selectors import ScorerEstimates, run_estimates
from evalsite.review.estimates.services import (
    SampleDesign,
    calibration_sample_create,
)
from evalsite.review.models import ReviewQueue

router = Router(tags=["review"])


@router.get("/runs/{run_id}/estimates", response=list[ScorerEstimatesOut])
def run_estimates_api(
    request: AuthenticatedHttpRequest, run_id: int
) -> list[ScorerEstimates]:
    """Per scorer: the judge-only, human-adjusted and corrected pass rate and mean,
    with the corrected figures' 95 % interval and the labels behind them."""
    run = run_get_for_user(user=request.user, pk=run_id)
    return run_estimates(run_id=run.pk)


@router.post("/runs/{run_id}/calibration-samples", response={201: CalibrationSampleOut})
def calibration_sample_create_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: CalibrationSampleIn
) -> Status[ReviewQueue]:
    """Draw a calibration sample of one scorer's results into a new review queue."""
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    run_scorer = RunScorer.objects.filter(run=run, pk=payload.run_scorer_id).first()
    if run_scorer is None:
        raise Http404("No such scorer in this run.")
    queue = calibration_sample_create(
        run=run,
        run_scorer=run_scorer,
        user=request.user,
        spec=SampleDesign(
            design=payload.design,
            budget=payload.budget,
            floor=payload.floor,
            strata=payload.strata,
            seed=payload.seed,
        ),
        name=payload.name,
        blind=payload.blind,
        overlap=payload.overlap,
        assign_round_robin=payload.assign_round_robin,
    )
    return Status(201, queue)
