"""The results explorer of a run."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Result, Run
from evalsite.evals.selectors import run_get_for_user
from evalsite.lib.htmx import partial, vary_on_htmx
from evalsite.review.forms import ExplorerFilterForm, QueueCreateForm
from evalsite.review.schemas import ResultQuery
from evalsite.review.selectors.explorer import (
    DEFAULT_SORT,
    SORT_LABELS,
    PagedResults,
    results_filter,
)
from evalsite.review.views.common import item_url, user_can_write


def _explorer_context(
    request: HttpRequest, run: Run, form: ExplorerFilterForm
) -> dict[str, Any]:
    valid = form.is_valid()
    result_query = form.query if valid else ResultQuery()
    per_page = (form.cleaned_data.get("per_page") if valid else None) or 50
    page_number = (form.cleaned_data.get("page") if valid else None) or 1
    results: Page[Result] | None = None
    paged: PagedResults | None = None
    if valid:
        paged = PagedResults(
            results_filter(run=run, query=result_query, user=request.user)
        )
        results = Paginator(paged, per_page).get_page(page_number)  # type: ignore[arg-type]  # PagedResults has the len() and slicing Paginator uses
    query = result_query.to_querydict()
    if per_page != 50:
        query["per_page"] = str(per_page)
    base_url = reverse("review:explorer", args=[run.project_id, run.pk])
    rows = [
        {"result": result, "item_url": item_url(run.project_id, result.pk)}
        for result in results or []
    ]
    return {
        "project": run.project,
        "run": run,
        "form": form,
        "page_obj": results,
        "count_capped": bool(paged and paged.capped),
        "rows": rows,
        "query": urlencode(query),
        "sort_links": _sort_links(base_url, query, result_query.sort),
        "base_url": base_url,
        "can_write": user_can_write(run.project),
        "queue_form": QueueCreateForm(),
        "queue_hidden": query,
    }


def _sort_links(base_url: str, query: dict[str, str], current: str) -> dict[str, str]:
    """Column header links: clicking a sorted column reverses it."""
    links = {}
    for key in ("item", "score", "final", "updated"):
        target = f"-{key}" if current == key else key
        params = {k: v for k, v in query.items() if k != "sort"}
        if target != DEFAULT_SORT:
            params["sort"] = target
        links[key] = f"{base_url}?{urlencode(params)}" if params else base_url
    return links


@require_GET
@vary_on_htmx
def explorer(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    form = ExplorerFilterForm(request.GET, run_scorers=list(run.run_scorers.all()))
    context = _explorer_context(request, run, form)
    context["sort_labels"] = SORT_LABELS
    template = partial(request, "review/explorer.html", "explorer")
    return render(request, template, context, status=200 if form.is_valid() else 400)
