"""HTML views: judges, scorers, runs (thin: authorise, call a service, render)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from evalsite.accounts.selectors import project_get_for_user, require_run_start
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals import selectors, services
from evalsite.evals.forms import JudgeForm, RunStartForm, ScorerForm
from evalsite.evals.models import Run
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.services.scorers import SCORER_KINDS
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import partial, vary_on_htmx, wants_partial
from scoring import KINDS

# --------------------------------------------------------------------------- judges


@require_GET
def judge_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    return render(
        request,
        "evals/judges.html",
        {
            "project": project,
            "judges": selectors.judge_list(project_id=project.pk),
            "form": JudgeForm(),
            "bound": selectors.judge_rate_bound_new(),
        },
    )


def _judge_fields(form: JudgeForm) -> dict[str, Any]:
    data = dict(form.cleaned_data)
    return {
        "api_key": data.pop("api_key") or None,
        "api_key_env": data.pop("api_key_env") or None,
        **data,
    }


@require_POST
@sensitive_post_parameters("api_key")
@sensitive_variables("fields", "form")
def judge_create(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    form = JudgeForm(request.POST)
    if form.is_valid():
        fields = _judge_fields(form)
        fields.pop("clear_api_key", None)
        try:
            judge = services.judge_create(project=project, user=request.user, **fields)
        except ApplicationError as exc:
            form_add_application_error(form, exc)
        else:
            messages.success(request, f"Judge connection “{judge.name}” created.")
            return redirect("evals:judges", project_id=project.pk)
    return render(
        request,
        "evals/judges.html",
        {
            "project": project,
            "judges": selectors.judge_list(project_id=project.pk),
            "form": form,
            "bound": selectors.judge_rate_bound_new(),
        },
        status=400,
    )


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("api_key")
@sensitive_variables("fields", "form")
def judge_edit(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    judge = selectors.judge_get_for_user(
        user=request.user, pk=pk, project_id=project_id, manage=True
    )
    if request.method == "POST":
        form = JudgeForm(request.POST)
        if form.is_valid():
            fields = _judge_fields(form)
            try:
                services.judge_update(judge=judge, user=request.user, **fields)
            except ApplicationError as exc:
                form_add_application_error(form, exc)
            else:
                messages.success(request, f"Judge connection “{judge.name}” saved.")
                return redirect("evals:judges", project_id=project_id)
        status = 400
    else:
        form = JudgeForm.for_judge(judge)
        status = 200
    return render(
        request,
        "evals/judge_edit.html",
        {
            "project": judge.project,
            "judge": judge,
            "form": form,
            "bound": selectors.judge_rate_bound(judge=judge),
        },
        status=status,
    )


@require_POST
@vary_on_htmx
def judge_test(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    judge = selectors.judge_get_for_user(
        user=request.user, pk=pk, project_id=project_id, manage=True
    )
    outcome = services.judge_test(judge=judge, user=request.user)
    context = {"project": judge.project, "judge": judge, "outcome": outcome}
    if wants_partial(request):
        return render(request, "evals/_judge_test.html", context)
    if outcome.ok:
        messages.success(request, f"{judge.name}: {outcome.message}")
    else:
        messages.error(request, f"{judge.name}: {outcome.message}")
    return redirect("evals:judges", project_id=project_id)


# --------------------------------------------------------------------------- scorers


@require_GET
def scorer_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    return render(
        request,
        "evals/scorers.html",
        {
            "project": project,
            "scorers": selectors.scorer_list(project_id=project.pk),
            "kinds": KINDS,
        },
    )


def _render_scorer_form(
    request: AuthenticatedHttpRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    template = "evals/scorer_form.html"
    if request.method == "GET":
        template = partial(request, template, "scorer-kind-fields")
    return render(request, template, context, status=status)


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def scorer_create(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    kind = request.POST.get("kind") or request.GET.get("kind") or "faithfulness"
    if kind not in SCORER_KINDS:
        return HttpResponse(
            "Unknown scorer kind, or one that needs data datasets cannot hold yet.",
            status=400,
        )
    if request.method == "POST":
        form = ScorerForm(request.POST, project_id=project.pk, kind=kind)
        if form.is_valid():
            try:
                scorer = services.scorer_create(
                    project=project,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    kind=kind,
                    judge=form.cleaned_data.get("judge"),
                    options=form.options(),
                )
            except ApplicationError as exc:
                for field, message in exc.field_errors.items():
                    form.add_option_error(field, message)
            else:
                messages.success(request, f"Scorer “{scorer.name}” created.")
                return redirect("evals:scorers", project_id=project.pk)
        return _render_scorer_form(
            request, {"project": project, "form": form, "scorer": None}, 400
        )
    offline = (
        selectors.judge_list(project_id=project.pk).filter(is_offline=True).first()
    )
    form = ScorerForm(
        project_id=project.pk,
        kind=kind,
        initial={"name": KINDS[kind].label, "judge": offline},
    )
    return _render_scorer_form(
        request, {"project": project, "form": form, "scorer": None}
    )


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def scorer_edit(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    scorer = selectors.scorer_get_for_user(
        user=request.user, pk=pk, project_id=project_id, write=True
    )
    if request.method == "POST":
        form = ScorerForm(
            request.POST,
            project_id=project_id,
            kind=scorer.kind,
            current_options=scorer.options,
        )
        if form.is_valid():
            try:
                saved = services.scorer_update(
                    scorer=scorer,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    judge=form.cleaned_data.get("judge"),
                    options=form.options(),
                )
            except ApplicationError as exc:
                for field, message in exc.field_errors.items():
                    form.add_option_error(field, message)
            else:
                note = (
                    f" (new version {saved.version})" if saved.pk != scorer.pk else ""
                )
                messages.success(request, f"Scorer “{saved.name}” saved{note}.")
                return redirect("evals:scorers", project_id=project_id)
        return _render_scorer_form(
            request, {"project": scorer.project, "form": form, "scorer": scorer}, 400
        )
    form = ScorerForm(
        project_id=project_id,
        kind=scorer.kind,
        current_options=scorer.options,
        initial={"name": scorer.name, "judge": scorer.judge},
    )
    return _render_scorer_form(
        request, {"project": scorer.project, "form": form, "scorer": scorer}
    )


# --------------------------------------------------------------------------- runs


@require_GET
def run_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    runs = list(selectors.run_list(project_id=project.pk)[:200])
    progress = selectors.run_progress_many(runs=runs)
    return render(
        request,
        "evals/runs.html",
        {
            "project": project,
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
        return render(request, "evals/run_new.html", context, status=400)
    has_choice = "dataset" in request.GET or "scorers" in request.GET
    form = RunStartForm(request.GET if has_choice else None, project_id=project.pk)
    context = {
        "project": project,
        "form": form,
        "can_start_paid": membership.can_start_paid_runs,
        **(_preview_context(project.pk, form) if has_choice else {"preview": None}),
    }
    template = partial(request, "evals/run_new.html", "run-preview")
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
    run_scorers = list(run.run_scorers.select_related("judge"))
    paid = any(rs.judge is not None and not rs.judge.is_offline for rs in run_scorers)
    return {
        "project": run.project,
        "run": run,
        "progress": selectors.run_progress(run=run),
        "run_scorers": run_scorers,
        "can_write": membership.can_review,
        # Retrying calls the judges again: on a paid judge, only who may start runs.
        "can_retry": membership.can_review
        and (not paid or membership.can_start_paid_runs),
    }


@require_GET
def run_detail(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    run = selectors.run_get_for_user(user=request.user, pk=pk, project_id=project_id)
    return render(
        request, "evals/run_detail.html", _run_context(run) | _summary_context(run)
    )


@require_GET
@vary_on_htmx
def run_progress(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    """The #run-progress region, polled by htmx; stops the polling once finished."""
    run = selectors.run_get_for_user(user=request.user, pk=pk, project_id=project_id)
    if not wants_partial(request):
        return redirect("evals:run_detail", project_id=project_id, pk=pk)
    response = render(request, "evals/run_detail.html#run-progress", _run_context(run))
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
    return render(
        request,
        "evals/run_detail.html#run-summary",
        _run_context(run) | _summary_context(run),
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


def _after_control(request: AuthenticatedHttpRequest, run: Run) -> HttpResponse:
    """htmx swaps the fresh progress region (polling again after a retry); without JS
    the browser goes back to the run page."""
    if wants_partial(request):
        # Only the run's own fields: a full refresh would drop run.project.membership.
        run.refresh_from_db(fields=["status", "started_at", "finished_at", "error"])
        return render(request, "evals/run_detail.html#run-progress", _run_context(run))
    return redirect("evals:run_detail", project_id=run.project_id, pk=run.pk)
