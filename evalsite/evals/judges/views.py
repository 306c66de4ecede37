"""HTML views of judge connections (thin: authorise, call a service, render)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.judges import selectors, services
from evalsite.evals.judges.forms import JudgeForm
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import vary_on_htmx, wants_partial


@require_GET
def judge_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    archived = request.GET.get("archived") == "1"
    return render(
        request,
        "evals/judges/judges.html",
        {
            "project": project,
            "archived": archived,
            "judges": selectors.judge_list(project_id=project.pk, archived=archived),
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
        "evals/judges/judges.html",
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
        "evals/judges/judge_edit.html",
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
        return render(request, "evals/judges/_judge_test.html", context)
    if outcome.ok:
        messages.success(request, f"{judge.name}: {outcome.message}")
    else:
        messages.error(request, f"{judge.name}: {outcome.message}")
    return redirect("evals:judges", project_id=project_id)
