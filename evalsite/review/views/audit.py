"""Audit log pages of a run and of a result."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.runs.selectors import result_get_for_user, run_get_for_user
from evalsite.lib.htmx import partial, vary_on_htmx
from evalsite.review.forms import AuditFilterForm
from evalsite.review.selectors.audit import (
    audit_actions_for_run,
    audit_list_for_result,
    audit_list_for_run,
)
from evalsite.review.selectors.blind import audit_mask_blind

AUDIT_PAGE_SIZE = 50


@require_GET
@vary_on_htmx
def run_audit(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Invalid filters.", status=400, content_type="text/plain")
    action = form.cleaned_data.get("action") or ""
    page_obj = Paginator(
        audit_list_for_run(run=run, action=action), AUDIT_PAGE_SIZE
    ).get_page(form.cleaned_data.get("page") or 1)
    page_obj.object_list = audit_mask_blind(
        page_obj.object_list,
        user=request.user,
        project_id=run.project_id,
        project=run.project,
    )
    query = urlencode({"action": action}) if action else ""
    context = {
        "project": run.project,
        "run": run,
        "events": page_obj,
        "page_obj": page_obj,
        "actions": audit_actions_for_run(run=run),
        "action": action,
        "query": query,
        "audit_url": reverse("review:run_audit", args=[project_id, run_id]),
    }
    template = partial(request, "review/audit.html", "audit-events")
    return render(request, template, context)


@require_GET
def result_audit(request: HttpRequest, project_id: int, result_id: int) -> HttpResponse:
    """The per-item audit partial (the item page includes the same template)."""
    result = result_get_for_user(user=request.user, pk=result_id, project_id=project_id)
    return render(
        request,
        "review/_audit.html",
        {
            "events": audit_mask_blind(
                audit_list_for_result(result=result)[:200],
                user=request.user,
                project_id=result.run.project_id,
                project=result.project,
            ),
            "result": result,
        },
    )
