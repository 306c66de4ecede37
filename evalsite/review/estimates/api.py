"""Review API: a run's corrected figures and its calibration samples."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.urls import reverse
from ninja import Router, Status

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import RunScorer
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.estimates.schemas import (
    CalibrationSampleIn,
    CalibrationSampleOut,
    EstimateFigureOut,
    ScorerEstimatesOut,
)
from evalsite.review.estimates.selectors import Figure, ScorerEstimates, run_estimates
from evalsite.review.estimates.services import (
    SampleDesign,
    calibration_sample_create,
)

router = Router(tags=["review"])


def _figure_out(fig: Figure | None) -> EstimateFigureOut | None:
    if fig is None:
        return None
    return EstimateFigureOut(
        metric=fig.metric,
        judge=fig.judge,
        adjusted=fig.adjusted,
        estimate=fig.estimate,
        ci_low=fig.ci_low,
        ci_high=fig.ci_high,
        half_width=fig.half_width,
        labels=fig.labels,
        population=fig.population,
        human_only=fig.human_only,
        human_only_half_width=fig.human_only_half_width,
        effective_labels=fig.effective_labels,
        labels_added=fig.labels_added,
        sentence=fig.sentence,
    )


def _estimates_out(est: ScorerEstimates) -> dict[str, Any]:
    return {
        "run_scorer_id": est.run_scorer_id,
        "name": est.name,
        "sample": est.sample.__dict__ if est.sample else None,
        "samples": [s.__dict__ for s in est.samples],
        "labels_used": est.labels_used,
        "labels_unused": est.labels_unused,
        "unused_reason": est.unused_reason,
        "unused_sources": [
            {"source": source, "results": n} for source, n in est.unused_sources
        ],
        "pass_rate": _figure_out(est.pass_rate),
        "mean": _figure_out(est.mean),
    }


@router.get("/runs/{run_id}/estimates", response=list[ScorerEstimatesOut])
def run_estimates_api(
    request: AuthenticatedHttpRequest, run_id: int
) -> list[dict[str, Any]]:
    """Per scorer: the judge-only, human-adjusted and corrected pass rate and mean,
    with the corrected figures' 95 % interval and the labels behind them."""
    run = run_get_for_user(user=request.user, pk=run_id)
    return [_estimates_out(est) for est in run_estimates(run_id=run.pk)]


@router.post("/runs/{run_id}/calibration-samples", response={201: CalibrationSampleOut})
def calibration_sample_create_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: CalibrationSampleIn
) -> Status[dict[str, Any]]:
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
    return Status(
        201,
        {
            "id": queue.pk,
            "run_id": run.pk,
            "name": queue.name,
            "size": queue.size,
            "design": queue.design,
            "url": reverse("review:queue", args=[queue.project_id, queue.pk]),
        },
    )
