"""The run comparison page."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.lib.htmx import partial, vary_on_htmx
from evalsite.review import selectors
from evalsite.review.forms import CompareForm


@require_GET
@vary_on_htmx
def compare(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    form = CompareForm(request.GET or None, project=project)
    context: dict[str, Any] = {"project": project, "form": form}
    status = 200
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        comparison = selectors.runs_compare(run_a=data["a"], run_b=data["b"])
        pair = comparison.pair_for(data.get("scorer"))
        context.update(
            comparison=comparison,
            pair=pair,
            page=comparison.page(
                number=data.get("page") or 1,
                per_page=data.get("per_page") or 50,
                only=data.get("only") or "",
                scorer=pair.a.pk if pair else None,
            ),
        )
    elif form.is_bound:
        status = 400
    template = partial(request, "review/compare.html", "compare-body")
    return render(request, template, context, status=status)
