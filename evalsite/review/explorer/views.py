"""The results explorer of a run: filters, paging, bulk actions and saved filters."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Result, Run
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx
from evalsite.review.explorer.bulk import (
    assignee_get,
    results_accept,
    results_assign,
    results_enqueue,
)
from evalsite.review.explorer.forms import (
    PAGE_SIZES,
    UNASSIGN,
    BulkActionForm,
    ExplorerFilterForm,
    SavedFilterForm,
)
from evalsite.review.explorer.keyset import KeysetPage, page_links
from evalsite.review.explorer.saved_filters import (
    saved_filter_create as saved_filter_create_service,
)
from evalsite.review.explorer.saved_filters import (
    saved_filter_delete as saved_filter_delete_service,
)
from evalsite.review.explorer.saved_filters_selectors import (
    saved_filter_for_run,
    saved_filter_get_for_user,
    saved_filter_list,
)
from evalsite.review.explorer.schemas import ResultQuery, ResultQueryError
from evalsite.review.explorer.selectors import (
    DEFAULT_SORT,
    SORT_LABELS,
    PagedResults,
    Selection,
    bulk_assignees,
    bulk_queues,
    results_page_at,
    results_selected,
    results_visible,
)
from evalsite.review.queues.forms import QueueCreateForm
from evalsite.review.queues.selectors import queue_get_for_user
from evalsite.review.tasks import bulk_start_in_background
from evalsite.review.views.common import item_url, user_can_write

DEFAULT_PER_PAGE = PAGE_SIZES[1]

# Bulk export action -> (exports URL name, extra parameters).
EXPORTS = {
    "export_csv": ("exports:run_csv", {}),
    "export_excel": ("exports:run_csv", {"excel": "1"}),
    "export_jsonl": ("exports:run_jsonl", {}),
    "export_parquet": ("exports:run_parquet", {}),
}


def _explorer_context(
    request: HttpRequest, run: Run, form: ExplorerFilterForm
) -> dict[str, Any]:
    valid = form.is_valid()
    result_query = form.query if valid else ResultQuery()
    per_page = (
        form.cleaned_data.get("per_page") if valid else None
    ) or DEFAULT_PER_PAGE
    page: KeysetPage | None = None
    results: list[Result] = []
    paged: PagedResults | None = None
    blind_hidden = 0
    if valid:
        # Results blind to the user are left out before filters and sorts on the
        # judge's or final values apply; how many is counted over the whole run
        # (selectors.blind).
        visible = results_visible(run=run, query=result_query, user=request.user)
        blind_hidden = visible.blind_hidden
        paged = PagedResults(visible.matching)
        paged.count()
        page, results = results_page_at(
            visible.ordered,
            sort=result_query.sort,
            limit=per_page,
            paging=form.cleaned_data,
        )
    query = result_query.to_querydict()
    if per_page != DEFAULT_PER_PAGE:
        query["per_page"] = str(per_page)
    base_url = reverse("review:explorer", args=[run.project_id, run.pk])
    rows = [
        {"result": result, "item_url": item_url(run.project_id, result.pk)}
        for result in results
    ]
    can_write = user_can_write(run.project)
    return {
        "project": run.project,
        "run": run,
        "form": form,
        "page": page,
        "pages": page_links(base_url, query, page) if page else {},
        "count": paged.count() if paged else 0,
        "count_capped": bool(paged and paged.capped),
        "blind_hidden": blind_hidden,
        "rows": rows,
        "query": urlencode(query),
        "sort_links": _sort_links(base_url, query, result_query.sort),
        "base_url": base_url,
        "matrix_url": _with_params(
            reverse("review:matrix", args=[run.project_id, run.pk]),
            result_query.to_querydict(),
        ),
        "can_write": can_write,
        "queue_form": QueueCreateForm(),
        "queue_hidden": query,
        # The filter alone (no paging): what "all matching" and a saved filter hold.
        "filter_hidden": result_query.to_querydict(),
        # Where the bulk bar comes back to: this very page.
        "paging_hidden": form.cursor_params,
        "per_page": per_page,
        "page_sizes": PAGE_SIZES,
        "saved_filters": saved_filter_list(project_id=run.project_id, user=request.user)
        if can_write
        else [],
        "saved_filter_form": SavedFilterForm(),
        "assignees": bulk_assignees(project_id=run.project_id) if can_write else [],
        "bulk_queues": bulk_queues(run=run) if can_write else [],
        "unassign": UNASSIGN,
    }


def _with_params(url: str, params: dict[str, str]) -> str:
    return f"{url}?{urlencode(params)}" if params else url


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
    template = partial(request, "review/explorer/explorer.html", "explorer")
    return render(request, template, context, status=200 if form.is_valid() else 400)


def _explorer_url(run: Run, params: dict[str, str]) -> str:
    base = reverse("review:explorer", args=[run.project_id, run.pk])
    return f"{base}?{urlencode(params)}" if params else base


def _posted_query(request: HttpRequest, run: Run) -> ResultQuery:
    """The filter sent along with a post as hidden fields (ResultQueryError if bad)."""
    return ResultQuery.from_querydict(request.POST, run_scorers=run.run_scorers.all())


def _form_errors(form: BulkActionForm | SavedFilterForm) -> str:
    return "; ".join(
        f"{name}: {' '.join(errors)}"  # type: ignore[arg-type]  # ErrorList iterates as str
        for name, errors in form.errors.items()
    )


@require_POST
def bulk_action(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """Accept, assign, queue or export the selected results (or all matching the
    posted filter), then back to the explorer, the queue or the download.

    Errors (nothing selected, ids of another run, a bad filter) come back as a message
    on the explorer page and change nothing."""
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=True
    )
    queues = bulk_queues(run=run)
    form = BulkActionForm(request.POST, queue_ids=[q.pk for q in queues])
    try:
        query = _posted_query(request, run)
    except ResultQueryError as exc:
        messages.error(request, f"Nothing changed: {exc.message}")
        return redirect_htmx(request, _explorer_url(run, {}))
    back = dict(query.to_querydict())
    if form.is_valid():
        for key in ("page", "after", "before", "per_page"):
            value = form.cleaned_data.get(key)
            if value and not (key == "per_page" and value == DEFAULT_PER_PAGE):
                back[key] = str(value)
    back_url = _explorer_url(run, back)
    if not form.is_valid():
        messages.error(request, f"Nothing changed: {_form_errors(form)}")
        return redirect_htmx(request, back_url)
    data = form.cleaned_data
    if data["scope"] == "all":
        selection = Selection(query=query)
    else:
        selection = Selection(ids=tuple(data["ids"]))
    try:
        return _bulk_do(request, run, data, selection, back_url)
    except ApplicationError as exc:
        messages.error(request, f"Nothing changed: {exc.message}")
        return redirect_htmx(request, back_url)


def _bulk_do(
    request: AuthenticatedHttpRequest,
    run: Run,
    data: dict[str, Any],
    selection: Selection,
    back_url: str,
) -> HttpResponse:
    action = data["action"]
    if action in EXPORTS:
        return redirect_htmx(request, _export_url(run, action, selection))
    if action in ("accept", "assign"):
        assignee = None
        if action == "assign" and data["assign_to"] != UNASSIGN:
            assignee = assignee_get(run=run, username=data["assign_to"])
        queued = bulk_start_in_background(
            user=request.user,
            run=run,
            action=action,
            selection=selection,
            assignee=assignee,
        )
        if queued:
            messages.success(
                request,
                f"{'Accepting' if action == 'accept' else 'Assigning'} {queued} "
                "results in the background; the run's audit log says when it is done.",
            )
            return redirect_htmx(request, back_url)
    if action == "accept":
        outcome = results_accept(run=run, user=request.user, selection=selection)
    elif action == "assign":
        username = data["assign_to"]
        assignee = (
            None if username == UNASSIGN else assignee_get(run=run, username=username)
        )
        outcome = results_assign(
            run=run, user=request.user, selection=selection, assignee=assignee
        )
    else:
        queue = None
        if data.get("queue") is not None:
            queue = queue_get_for_user(user=request.user, pk=data["queue"], write=True)
        outcome = results_enqueue(
            run=run,
            user=request.user,
            selection=selection,
            queue=queue,
            name=data.get("queue_name") or "",
            blind=data.get("blind") or False,
        )
        messages.success(request, outcome.summary())
        if outcome.queue is not None:
            back_url = reverse("review:queue", args=[run.project_id, outcome.queue.pk])
        return redirect_htmx(request, back_url)
    level = messages.SUCCESS if outcome.done else messages.WARNING
    messages.add_message(request, level, outcome.summary())
    return redirect_htmx(request, back_url)


def _export_url(run: Run, action: str, selection: Selection) -> str:
    """The run export restricted to the selection: the selected ids (checked here
    first, and again by the export), or the filter."""
    name, extra = EXPORTS[action]
    params: list[tuple[str, str]] = list(extra.items())
    if selection.query is not None:
        params += list(selection.query.to_querydict().items())
    else:
        params += [
            ("ids", str(pk))
            for pk in results_selected(run=run, ids=selection.ids or ())
        ]
    url = reverse(name, args=[run.project_id, run.pk])
    return f"{url}?{urlencode(params)}" if params else url


# ------------------------------------------------------------------ saved filters


@require_POST
def saved_filter_create(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponse:
    """Save the posted filter under a name, then show it. A bad name (empty, too
    long, NUL, a duplicate) renders the page again with the error on the field (400)."""
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=True
    )
    form = SavedFilterForm(request.POST)
    filter_form = ExplorerFilterForm(
        request.POST, run_scorers=list(run.run_scorers.all())
    )
    if form.is_valid() and filter_form.is_valid():
        try:
            saved = saved_filter_create_service(
                project=run.project,
                user=request.user,
                name=form.cleaned_data["name"],
                query=filter_form.query,
            )
        except ApplicationError as exc:
            errors = exc.field_errors or {"name": exc.message}
            for field, message in errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, f"Filter “{saved.name}” saved.")
            return redirect_htmx(
                request, _explorer_url(run, filter_form.query.to_querydict())
            )
    context = _explorer_context(request, run, filter_form)
    context.update(sort_labels=SORT_LABELS, saved_filter_form=form, saving=True)
    return render(request, "review/explorer/explorer.html", context, status=400)


@require_GET
def saved_filter_apply(
    request: AuthenticatedHttpRequest,
    project_id: int,
    run_id: int,
    saved_filter_id: int,
) -> HttpResponse:
    """Open the explorer of this run with one of my saved filters."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    saved = saved_filter_get_for_user(
        user=request.user, pk=saved_filter_id, project_id=project_id
    )
    query, notes = saved_filter_for_run(saved=saved, run=run)
    for note in notes:
        messages.warning(request, f"“{saved.name}”: {note}")
    base = reverse("review:explorer", args=[run.project_id, run.pk])
    return redirect_htmx(request, f"{base}?{query}" if query else base)


@require_POST
def saved_filter_delete(
    request: AuthenticatedHttpRequest,
    project_id: int,
    run_id: int,
    saved_filter_id: int,
) -> HttpResponse:
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=True
    )
    saved = saved_filter_get_for_user(
        user=request.user, pk=saved_filter_id, project_id=project_id, write=True
    )
    saved_filter_delete_service(saved=saved)
    messages.success(request, f"Filter “{saved.name}” deleted.")
    try:
        back = _posted_query(request, run).to_querydict()
    except ResultQueryError:
        back = {}
    return redirect_htmx(request, _explorer_url(run, back))
