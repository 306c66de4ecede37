"""HTML views of bias audits: a run's audits with the start form, and one audit's
figures (polled by htmx while its run judges)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.audits import selectors, services
from evalsite.evals.audits.forms import BiasAuditStartForm
from evalsite.evals.models import Run
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import vary_on_htmx, wants_partial


def _list_context(run: Run, form: BiasAuditStartForm) -> dict[str, Any]:
    return {
        "project": run.project,
        "run": run,
        "audits": list(selectors.bias_audit_list(run=run)),
        "form": form,
        "can_start": run.project.membership.can_manage,
    }


@require_GET
def bias_audit_list(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    return render(
        request,
        "evals/audits/audits.html",
        _list_context(run, BiasAuditStartForm(run=run)),
    )


@require_POST
def bias_audit_start(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    # It pays the judge again for every sampled result and change: owners only.
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, manage=True
    )
    form = BiasAuditStartForm(request.POST, run=run)
    if form.is_valid():
        try:
            audit = services.bias_audit_start(
                project=run.project,
                user=request.user,
                run=run,
                run_scorer=form.cleaned_data["run_scorer"],
                sample_size=form.cleaned_data["sample_size"],
                seed=form.cleaned_data["seed"],
            )
        except ApplicationError as exc:
            form_add_application_error(form, exc)
        else:
            messages.success(
                request,
                f"Bias audit started: {len(audit.sample)} results × "
                f"{audit.audit_run.run_scorers.count()} changes to judge.",
            )
            return redirect(
                "evals:bias_audit_detail",
                project_id=run.project_id,
                run_id=run.pk,
                pk=audit.pk,
            )
    return render(
        request, "evals/audits/audits.html", _list_context(run, form), status=400
    )


@require_GET
@vary_on_htmx
def bias_audit_detail(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int, pk: int
) -> HttpResponse:
    """The audit's page; htmx polls its #bias-audit-figures region until the audit
    run has finished."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    audit = selectors.bias_audit_get_for_user(user=request.user, pk=pk, run_id=run.pk)
    context = {
        "project": run.project,
        "run": run,
        "audit": audit,
        "figures": selectors.bias_audit_figures(audit=audit),
    }
    if wants_partial(request):
        response = render(
            request, "evals/audits/audit_detail.html#bias-audit-figures", context
        )
        if audit.audit_run.is_finished:
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, "evals/audits/audit_detail.html", context)
