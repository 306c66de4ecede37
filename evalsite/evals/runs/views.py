"""HTML views: judges, scorers, runs (thin: authorise, call a service, render)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from evalsite.accounts.selectors import project_get_for_user, require_run_start
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Run
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.runs import selectors, services
from evalsite.evals.runs.forms import RunStartForm
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx, wants_partial

# --------------------------------------------------------------------------- judges


# --------------------------------------------------------------------------- scorers


# --------------------------------------------------------------------------- runs


@require_GET
def run_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    archived = request.GET.get("archived") == "1"
    runs = list(selectors.run_list(project_id=project.pk, archived=archived)[:200])
    progress = selectors.run_progress_many(runs=runs)
    return render(
        request,
        "evals/runs/runs.html",
        {
            "project": project,
            "archived": archived,
            "rows": [(run, progress[run.pk]) for run in runs],
        },
    )


def _preview_context(project_id: int, form: RunStartForm) -> dict[str, Any]:
    if not form.is_valid():
        return {"preview": None}
    return {
        "preview": services.run_preview(
            dataset=form.cleaned_data["dataset"],
            scorers=list(form.cleaned_data["scorers"]),
        )
    }


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def run_create(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """GET: the start form (with a preview once a dataset and scorers are chosen).
    POST: start the run. htmx GETs get only the #run-preview region. Viewers get
    neither (403); reviewers start runs on paid judges only if the owner allows it."""
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    membership = project.membership
    if request.method == "POST":
        form = RunStartForm(request.POST, project_id=project.pk)
        if form.is_valid():
            require_run_start(
                membership=membership,
                judges=[s.judge for s in form.cleaned_data["scorers"]],
            )
            try:
                run = services.run_start(
                    project=project,
                    user=request.user,
                    dataset=form.cleaned_data["dataset"],
                    scorers=list(form.cleaned_data["scorers"]),
                    name=form.cleaned_data.get("name") or "",
                )
            except ApplicationError as exc:
                form_add_application_error(form, exc)
            else:
                messages.success(
                    request, f"{run} started: {run.total} results to judge."
                )
                return redirect("evals:run_detail", project_id=project.pk, pk=run.pk)
        context = {
            "project": project,
            "form": form,
            "can_start_paid": membership.can_start_paid_runs,
            **_preview_context(project.pk, form),
        }
        return render(request, "evals/runs/run_new.html", context, status=400)
    has_choice = "dataset" in request.GET or "scorers" in request.GET
    form = RunStartForm(request.GET if has_choice else None, project_id=project.pk)
    context = {
        "project": project,
        "form": form,
        "can_start_paid": membership.can_start_paid_runs,
        **(_preview_context(project.pk, form) if has_choice else {"preview": None}),
    }
    template = partial(request, "evals/runs/run_new.html", "run-preview")
    return render(request, template, context)


def _summary_context(run: Run) -> dict[str, Any]:
    """The judge-vs-human aggregates with their summary partial, and the errors grouped
    by message."""
    return {
        "aggregates": run_aggregates(run_id=run.pk),
        "error_groups": selectors.run_error_groups(run=run),
    }


def _run_context(run: Run) -> dict[str, Any]:
    membership = run.project.membership
    run_scorers = list(run.run_scorers.select_related("judge", "judge_version"))
    paid = any(rs.judge is not None and not rs.judge.is_offline for rs in run_scorers)
    return {
        "project": run.project,
        "run": run,
        "progress": selectors.run_progress(run=run),
        "run_scorers": run_scorers,
        "can_write": membership.can_review,
        "can_rejudge": membership.can_manage
        and run.is_finished
        and run.purpose == Run.Purpose.RUN,
        "rejudged_as": list(
            selectors.runs_listed().filter(rejudge_of=run).order_by("pk")
        ),
        # Retrying calls the judges again: on a paid judge, only who may start runs.
        "can_retry": membership.can_review
        and (not paid or membership.can_start_paid_runs),
    }


@require_GET
def run_detail(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    run = selectors.run_get_for_user(user=request.user, pk=pk, project_id=project_id)
    # The summary first: its aggregates cache the judge sides that the progress, the
    # result count and the error groups are then folded from.
    summary = _summary_context(run)
    context = _run_context(run) | summary
    if context["can_write"]:
        # "Create queue from these N results" with no filter: every result of the run.
        context["queue_count"] = selectors.run_result_count(run=run)
    return render(request, "evals/runs/run_detail.html", context)


@require_GET
@vary_on_htmx
def run_progress(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    """The #run-progress region, polled by htmx; stops the polling once finished."""
    run = selectors.run_get_for_user(user=request.user, pk=pk, project_id=project_id)
    if not wants_partial(request):
        return redirect("evals:run_detail", project_id=project_id, pk=pk)
    response = render(
        request, "evals/runs/run_detail.html#run-progress", _run_context(run)
    )
    if run.is_finished:
        stop = HttpResponseStopPolling(response.content)
        return trigger_client_event(stop, "run-finished")
    return response


@require_GET
@vary_on_htmx
def run_summary(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    run = selectors.run_get_for_user(user=request.user, pk=pk, project_id=project_id)
    if not wants_partial(request):
        return redirect("evals:run_detail", project_id=project_id, pk=pk)
    summary = _summary_context(run)  # first, as in run_detail
    return render(
        request, "evals/runs/run_detail.html#run-summary", _run_context(run) | summary
    )


@require_POST
@vary_on_htmx
def run_cancel(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    run = selectors.run_get_for_user(
        user=request.user, pk=pk, project_id=project_id, write=True
    )
    try:
        services.run_cancel(run=run, user=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{run} cancelled.")
    return _after_control(request, run)


@require_POST
@vary_on_htmx
def run_retry_failed(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    run = selectors.run_get_for_user(
        user=request.user, pk=pk, project_id=project_id, write=True
    )
    # A retry calls the run's judges again: the same rule as starting the run.
    require_run_start(
        membership=run.project.membership,
        judges=[rs.judge for rs in run.run_scorers.select_related("judge")],
    )
    try:
        count = services.run_retry_failed(run=run, user=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{count} failed results queued again.")
    return _after_control(request, run)


@require_POST
@vary_on_htmx
def run_rejudge(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    """Owners: judge the run's items again with each scorer's current judge, as a new
    run (the old one is kept as it is)."""
    run = selectors.run_get_for_user(
        user=request.user, pk=pk, project_id=project_id, manage=True
    )
    require_run_start(
        membership=run.project.membership,
        judges=[rs.judge for rs in run.run_scorers.select_related("judge")],
    )
    try:
        new = services.run_rejudge(run=run, user=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect_htmx(
            request, reverse("evals:run_detail", args=[project_id, run.pk])
        )
    messages.success(request, f"{new} started: {new.total} results to judge.")
    return redirect_htmx(
        request, reverse("evals:run_detail", args=[project_id, new.pk])
    )


def _after_control(request: AuthenticatedHttpRequest, run: Run) -> HttpResponse:
    """htmx swaps the fresh progress region (polling again after a retry); without JS
    the browser goes back to the run page."""
    if wants_partial(request):
        # Only the run's own fields: a full refresh would drop run.project.membership.
        run.refresh_from_db(fields=["status", "started_at", "finished_at", "error"])
        return render(
            request, "evals/runs/run_detail.html#run-progress", _run_context(run)
        )
    return redirect("evals:run_detail", project_id=run.project_id, pk=run.pk)
