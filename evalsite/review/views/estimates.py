"""Estimates you can defend: the calibration sample page (with its planner) and the
estimates' CSV. The corrected figures themselves show on the run page
(templates/review/_estimates.html)."""

from __future__ import annotations

import csv
import io
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
from evalsite.evals.selectors import run_get_for_user
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx
from evalsite.review.calibration_forms import CalibrationSampleForm, SamplePlanForm
from evalsite.review.selectors.estimates import (
    SamplePlan,
    calibration_samples,
    run_estimates,
    sample_plan,
)
from evalsite.review.services.calibration import (
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
        template = partial(request, "review/calibration_create.html", "sample-plan")
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
        "review/calibration_create.html",
        _context(run, form, request.POST),
        status=400,
    )


CSV_COLUMNS = [
    "scorer",
    "metric",
    "judge_only",
    "human_adjusted",
    "corrected",
    "ci_low",
    "ci_high",
    "half_width",
    "labels_used",
    "labels_not_used",
    "results",
    "human_only",
    "human_only_half_width",
    "effective_labels",
    "sample_queue_id",
    "sample_design",
    "sentence",
]


@require_GET
def estimates_csv(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """The run's corrected figures, one row per scorer and figure."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for est in run_estimates(run_id=run.pk):
        for fig in est.figures:
            writer.writerow(
                [
                    est.name,
                    fig.metric,
                    fig.judge,
                    fig.adjusted,
                    fig.estimate,
                    fig.ci_low,
                    fig.ci_high,
                    fig.half_width,
                    fig.labels,
                    est.labels_unused,
                    fig.population,
                    fig.human_only,
                    fig.human_only_half_width,
                    fig.effective_labels,
                    est.sample.queue_id if est.sample else "",
                    est.sample.design if est.sample else "",
                    fig.sentence,
                ]
            )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="run-{run.pk}-estimates.csv"'
    )
    return response
