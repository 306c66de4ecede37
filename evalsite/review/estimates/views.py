"""Estimates you can defend: the calibration sample page (with its planner) and the
estimates' CSV. The corrected figures themselves show on the run page
(templates/review/estimates/_estimates.html)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Run, RunScorer
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx
from evalsite.review.estimates.forms import CalibrationSampleForm, SamplePlanForm
from evalsite.review.estimates.selectors import (
    SamplePlan,
    calibration_samples,
    run_estimates,
    sample_plan,
)
from evalsite.review.estimates.services import (
    DEFAULT_FLOOR,
    SampleDesign,
    calibration_sample_create,
)

DEFAULT_HALF_WIDTH = 3.0


def _plan(run: Run, data: Any) -> tuple[RunScorer | None, SamplePlan | None]:
    form = SamplePlanForm(data, run_id=run.pk)
    if not form.is_valid():
        return None, None
    rs: RunScorer = form.cleaned_data["run_scorer"]
    rs.run = run
    half_width = form.cleaned_data.get("half_width") or DEFAULT_HALF_WIDTH
    return rs, sample_plan(run_scorer=rs, half_width=half_width / 100)


def _context(run: Run, form: CalibrationSampleForm, data: Any) -> dict[str, Any]:
    run_scorer, plan = _plan(run, data)
    return {
        "project": run.project,
        "run": run,
        "form": form,
        "plan": plan,
        "run_scorer": run_scorer,
        "samples": calibration_samples(run_scorer_id=run_scorer.pk)
        if run_scorer
        else [],
    }


def _initial(run: Run, request: AuthenticatedHttpRequest) -> dict[str, Any]:
    first = run.run_scorers.order_by("position", "id").first()
    return {
        "run_scorer": request.GET.get("run_scorer") or (first.pk if first else None),
        "half_width": request.GET.get("half_width") or DEFAULT_HALF_WIDTH,
    }


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def calibration_create(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """GET: the form and, for the chosen scorer and half-width, the labels needed
    (htmx swaps #sample-plan as they change). POST: draw the sample, go to its queue."""
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=True
    )
    if request.method == "GET":
        initial = _initial(run, request)
        form = CalibrationSampleForm(initial=initial, run_id=run.pk)
        context = _context(run, form, initial)
        template = partial(
            request, "review/estimates/calibration_create.html", "sample-plan"
        )
        return render(request, template, context)
    form = CalibrationSampleForm(request.POST, run_id=run.pk)
    if form.is_valid():
        data = form.cleaned_data
        try:
            queue = calibration_sample_create(
                run=run,
                run_scorer=data["run_scorer"],
                user=request.user,
                spec=SampleDesign(
                    design=data["design"],
                    budget=data["budget"],
                    floor=data.get("floor") or DEFAULT_FLOOR,
                    strata=data.get("strata") or "verdict",
                    seed=data.get("seed") or 0,
                ),
                name=data.get("name") or "",
                blind=data.get("blind") or False,
                overlap=data.get("overlap"),
                assign_round_robin=data.get("assign_round_robin") or False,
            )
        except ApplicationError as exc:
            placed = False
            for field, message in exc.field_errors.items():
                if field in form.fields:
                    form.add_error(field, message)
                    placed = True
            if not placed:
                form.add_error(None, exc.message)
        else:
            messages.success(
                request,
                f"Calibration sample “{queue.name}” drawn "
                f"({queue.size} result{pluralize(queue.size)}).",
            )
            url = reverse("review:queue", args=[project_id, queue.pk])
            return redirect_htmx(request, url)
    return render(
        request,
        "review/estimates/calibration_create.html",
        _context(run, form, request.POST),
        status=400,
    )


@require_GET
def run_estimates_fragment(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """Every scorer's corrected figures, loaded into the run page once it shows (the
    run page is evals', which sits below the calibration samples that feed them)."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    context = {
        "project": run.project,
        "run": run,
        "estimates": run_estimates(run_id=run.pk),
        "can_write": run.project.membership.can_review,
    }
    return render(request, "review/estimates/_run_estimates.html", context)
