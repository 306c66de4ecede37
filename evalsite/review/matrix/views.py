"""The results matrix page: items × scorers, with the explorer's filters."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Run
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.lib.htmx import partial, vary_on_htmx
from evalsite.review.explorer.forms import PAGE_SIZES, ExplorerFilterForm
from evalsite.review.explorer.keyset import page_links
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import DEFAULT_SORT, SORT_LABELS
from evalsite.review.matrix.selectors import matrix_page
from evalsite.review.views.common import user_can_write

DEFAULT_PER_PAGE = PAGE_SIZES[1]


def _url(name: str, run: Run, params: dict[str, str]) -> str:
    url = reverse(name, args=[run.project_id, run.pk])
    return f"{url}?{urlencode(params)}" if params else url


def _matrix_context(
    request: AuthenticatedHttpRequest, run: Run, form: ExplorerFilterForm
) -> dict[str, Any]:
    valid = form.is_valid()
    query = form.query if valid else ResultQuery()
    per_page = (form.cleaned_data.get("per_page") if valid else None) or (
        DEFAULT_PER_PAGE
    )
    params = query.to_querydict()
    if per_page != DEFAULT_PER_PAGE:
        params["per_page"] = str(per_page)
    base_url = reverse("review:matrix", args=[run.project_id, run.pk])
    matrix = None
    if valid and form.run_scorers:
        matrix = matrix_page(
            run=run,
            query=query,
            user=request.user,
            run_scorers=form.run_scorers,
            limit=per_page,
            paging=form.cleaned_data,
        )
    return {
        "project": run.project,
        "run": run,
        "form": form,
        "matrix": matrix,
        "pages": page_links(base_url, params, matrix.page) if matrix else {},
        "base_url": base_url,
        "explorer_url": _url("review:explorer", run, query.to_querydict()),
        "sort_by_lead": query.run_scorer_id is None and query.sort != DEFAULT_SORT,
        "sort_labels": SORT_LABELS,
        "per_page": per_page,
        "page_sizes": PAGE_SIZES,
        # Cell links as prefix + id: reversing 250 URLs per page cost more than
        # every query of the page together (1.2 s of 1.3 s on the 100k-item bench).
        "item_prefix": _item_prefix(run.project_id),
        "can_write": user_can_write(run.project),
        "queue_hidden": query.to_querydict(),
    }


def _item_prefix(project_id: int) -> str:
    """The item page's URL up to the result id ("/projects/1/results/")."""
    url = reverse("review:item", args=[project_id, 1])
    if not url.endswith("/1/"):
        raise AssertionError(f"unexpected item URL shape {url!r}")
    return url[: -len("1/")]


@require_GET
@vary_on_htmx
def matrix(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """The matrix page, or its #matrix region for htmx (filters, sort, paging)."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    run_scorers = list(run.run_scorers.order_by("position", "id"))
    form = ExplorerFilterForm(request.GET, run_scorers=run_scorers)
    context = _matrix_context(request, run, form)
    template = partial(request, "review/matrix/matrix.html", "matrix")
    return render(request, template, context, status=200 if form.is_valid() else 400)
