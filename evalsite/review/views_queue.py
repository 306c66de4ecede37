"""Results explorer, review queues, assigned work, comments and audit pages (helper D2).

Views are adapters: look up with a `*_get_for_user` helper (404 for outsiders, 403 for
viewers on writes), call one service, render the page or, for htmx, its partial.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.accounts.models import Project
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, Run
from evalsite.review import services_queue
from evalsite.review.forms_queue import (
    AuditFilterForm,
    CommentForm,
    ExplorerFilterForm,
    QueueCreateForm,
    filters_to_query,
)
from evalsite.review.models_queue import QueueEntry, ReviewQueue
from evalsite.review.selectors import (
    analysis_view,
    result_get_for_user,
    run_aggregates,
    run_get_for_user,
)
from evalsite.review.selectors_explorer import (
    DEFAULT_SORT,
    SORT_LABELS,
    PagedResults,
    ResultFilters,
    assigned_results,
    assigned_runs_summary,
    audit_actions_for_run,
    audit_list_for_result,
    audit_list_for_run,
    comment_list,
    flip_fields,
    queue_entry_at,
    queue_estimate,
    queue_get_for_user,
    queue_list_for_project,
    queue_next_unreviewed,
    queue_progress,
    results_filter,
)
from scoring import KINDS

AUDIT_PAGE_SIZE = 50
ASSIGNED_PAGE_SIZE = 50


def _can_write(project: Project) -> bool:
    return bool(project.membership.can_review)  # type: ignore[attr-defined]


def _item_url(project_id: int, result_id: int) -> str | None:
    """D1's item page for a result, when it is wired."""
    try:
        return reverse("review:item", args=[project_id, result_id])
    except NoReverseMatch:
        return None


# ---------------------------------------------------------------- explorer


def _explorer_context(
    request: HttpRequest, run: Run, form: ExplorerFilterForm
) -> dict[str, Any]:
    valid = form.is_valid()
    filters: ResultFilters = form.to_filters() if valid else {"sort": DEFAULT_SORT}
    per_page = (form.cleaned_data.get("per_page") if valid else None) or 50
    page_number = (form.cleaned_data.get("page") if valid else None) or 1
    results = paged = None
    if valid:
        paged = PagedResults(results_filter(run=run, params=filters, user=request.user))
        results = Paginator(paged, per_page).get_page(page_number)
    query = filters_to_query(filters)
    if per_page != 50:
        query["per_page"] = str(per_page)
    base_url = reverse("review:explorer", args=[run.project_id, run.pk])
    rows = [
        {"result": result, "item_url": _item_url(run.project_id, result.pk)}
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
        "sort_links": _sort_links(base_url, query, filters.get("sort") or DEFAULT_SORT),
        "base_url": base_url,
        "can_write": _can_write(run.project),
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
def explorer(request: HttpRequest, project_id: int, run_id: int) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    form = ExplorerFilterForm(request.GET, run_scorers=list(run.run_scorers.all()))
    context = _explorer_context(request, run, form)
    context["sort_labels"] = SORT_LABELS
    template = "review/explorer.html"
    if request.htmx:
        template += "#explorer"
    return render(request, template, context, status=200 if form.is_valid() else 400)


@require_POST
def queue_create(request: HttpRequest, project_id: int, run_id: int) -> HttpResponse:
    run = run_get_for_user(
        user=request.user, pk=run_id, project_id=project_id, write=True
    )
    filter_form = ExplorerFilterForm(
        request.POST, run_scorers=list(run.run_scorers.all())
    )
    form = QueueCreateForm(request.POST)
    if not (filter_form.is_valid() and form.is_valid()):
        errors = {**filter_form.errors, **form.errors}
        return HttpResponse(
            "Invalid queue request: "
            + "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()),
            status=400,
            content_type="text/plain",
        )
    filters = filter_form.to_filters()
    source = form.cleaned_data["source"]
    if source == "failing":
        source = ReviewQueue.Source.FILTERS
        if filters.get("final_passed") is None:
            filters["final_passed"] = False
    pass_share = form.cleaned_data.get("pass_share")
    try:
        queue = services_queue.queue_create(
            run=run,
            user=request.user,
            filters=filters,
            source=source,
            name=form.cleaned_data.get("name") or "",
            blind=form.cleaned_data.get("blind") or False,
            pass_share=pass_share / 100 if pass_share is not None else None,
            seed=form.cleaned_data.get("seed") or 0,
            assign_round_robin=form.cleaned_data.get("assign_round_robin") or False,
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        back = reverse("review:explorer", args=[project_id, run_id])
        query = urlencode(filters_to_query(filter_form.to_filters()))
        url = f"{back}?{query}" if query else back
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    messages.success(request, f"Queue “{queue.name}” created ({queue.size} results).")
    url = reverse("review:queue", args=[project_id, queue.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# ---------------------------------------------------------------- queue


def _queue_url(queue: ReviewQueue, position: int | None) -> str:
    url = reverse("review:queue", args=[queue.project_id, queue.pk])
    return f"{url}?pos={position}" if position else url


def _queue_card_context(
    request: HttpRequest, queue: ReviewQueue, position: int, error: str = ""
) -> dict[str, Any]:
    entry = queue_entry_at(queue=queue, position=position)
    progress = queue_progress(queue=queue)
    result = entry.result if entry else None
    blind = queue.blind or queue.project.blind_review
    answered = bool(result and (result.human_passed is not None or result.reviewed))
    hidden = blind and not answered
    fields = []
    view = None
    kind_spec = None
    aggregates = []
    comments = []
    if result is not None:
        kind_spec = KINDS.get(result.run_scorer.kind)
        fields = flip_fields(
            kind=result.run_scorer.kind,
            analysis=result.final_analysis or result.analysis,
        )
        view = analysis_view(
            kind=result.run_scorer.kind,
            analysis=result.analysis,
            final_analysis=result.final_analysis,
            context=list(result.item.context or []),
        )
        aggregates = run_aggregates(
            run_id=queue.run_id, run_scorer_id=result.run_scorer_id
        )
        comments = list(comment_list(result=result))
    can_write = _can_write(queue.project)
    return {
        "project": queue.project,
        "queue": queue,
        "run": queue.run,
        "entry": entry,
        "result": result,
        "position": position,
        "progress": progress,
        "prev_url": _queue_url(queue, position - 1) if position > 1 else None,
        "next_url": _queue_url(queue, position + 1)
        if position < progress["total"]
        else None,
        "blind": blind,
        "hidden": hidden,
        "flip_fields": fields,
        "analysis": view,
        "kind_spec": kind_spec,
        "aggregates": aggregates,
        "estimate": queue_estimate(queue=queue),
        "comments": comments,
        "comment_form": CommentForm(),
        "can_write": can_write,
        "item_url": _item_url(queue.project_id, result.pk) if result else None,
        "has_undo": bool(result and result.overridden),
        "error": error,
        "action_base": reverse(
            "review:queue_action", args=[queue.project_id, queue.pk, position, "x"]
        )[:-2],
    }


@require_GET
def queue_detail(request: HttpRequest, project_id: int, queue_id: int) -> HttpResponse:
    queue = queue_get_for_user(user=request.user, pk=queue_id, project_id=project_id)
    raw = request.GET.get("pos")
    if raw is None:
        position = queue_next_unreviewed(queue=queue) or 1
    elif raw.isdigit() and 1 <= int(raw) <= max(queue.size, 1):
        position = int(raw)
    else:
        return HttpResponse(
            f"pos must be a number between 1 and {queue.size}.",
            status=400,
            content_type="text/plain",
        )
    context = _queue_card_context(request, queue, position)
    template = "review/queue.html"
    if request.htmx:
        template += "#queue-card"
    return render(request, template, context)


QUEUE_ACTIONS = ("accept", "pass", "fail", "flip", "undo")


@require_POST
def queue_action(
    request: HttpRequest, project_id: int, queue_id: int, position: int, action: str
) -> HttpResponse:
    """One review key on the current entry: accept, pass, fail, flip (n), undo."""
    queue = queue_get_for_user(
        user=request.user, pk=queue_id, project_id=project_id, write=True
    )
    entry = QueueEntry.objects.filter(queue=queue, position=position).first()
    if entry is None or action not in QUEUE_ACTIONS:
        return HttpResponse("No such queue entry or action.", status=404)
    result = result_get_for_user(
        user=request.user, pk=entry.result_id, write=True, project_id=project_id
    )
    error = ""
    try:
        _apply_action(request, result, action)
    except ApplicationError as exc:
        error = exc.message
    if not request.htmx:
        if error:
            messages.error(request, error)
        return HttpResponseRedirect(_queue_url(queue, position))
    context = _queue_card_context(request, queue, position, error=error)
    # htmx does not swap 4xx bodies by default; the card carries the error message
    # inside it, so it is sent with a 200 and the reviewer sees why nothing changed.
    return render(request, "review/queue.html#queue-card", context)


def _apply_action(request: HttpRequest, result: Result, action: str) -> None:
    from evalsite.review import services as review_services

    user = request.user
    if action == "accept":
        review_services.result_accept(result=result, user=user)
    elif action in ("pass", "fail"):
        review_services.result_set_human_pass(
            result=result,
            user=user,
            passed=action == "pass",
            note=request.POST.get("note", ""),
        )
    elif action == "flip":
        raw = request.POST.get("n", "")
        if not raw.isdigit():
            raise ApplicationError(
                "Say which verdict to flip (1–9).", field_errors={"n": "A number."}
            )
        services_queue.result_flip_field(
            result=result, user=user, number=int(raw), note=request.POST.get("note", "")
        )
    elif action == "undo":
        services_queue.result_undo_last(result=result, user=user)


# ---------------------------------------------------------------- assigned


@require_GET
def assigned(request: HttpRequest, project_id: int) -> HttpResponse:
    from evalsite.accounts.selectors import project_get_for_user

    project = project_get_for_user(user=request.user, pk=project_id)
    results = Paginator(
        assigned_results(project_id=project_id, user=request.user), ASSIGNED_PAGE_SIZE
    )
    raw_page = request.GET.get("page", "1")
    if not raw_page.isdigit():
        return HttpResponse("page must be a number.", status=400)
    page_obj = results.get_page(int(raw_page))
    rows = [{"result": r, "item_url": _item_url(project_id, r.pk)} for r in page_obj]
    context = {
        "project": project,
        "runs": assigned_runs_summary(project_id=project_id, user=request.user),
        "queues": queue_list_for_project(project_id=project_id)[:20],
        "page_obj": page_obj,
        "rows": rows,
        "can_write": _can_write(project),
    }
    template = "review/assigned.html"
    if request.htmx:
        template += "#assigned-results"
    return render(request, template, context)


# ---------------------------------------------------------------- comments


def _safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


@require_http_methods(["GET", "POST"])
def comments(request: HttpRequest, project_id: int, result_id: int) -> HttpResponse:
    """GET: the comment list partial. POST: add a comment (htmx appends it)."""
    write = request.method == "POST"
    result = result_get_for_user(
        user=request.user, pk=result_id, write=write, project_id=project_id
    )
    project = result.project  # type: ignore[attr-defined]
    if request.method == "GET":
        return render(
            request,
            "review/_comments.html",
            {
                "result": result,
                "comments": comment_list(result=result),
                "comment_form": CommentForm(),
                "can_write": _can_write(project),
            },
        )
    form = CommentForm(request.POST)
    fallback = _item_url(project_id, result_id) or reverse(
        "review:explorer", args=[project_id, result.run_id]
    )
    if not form.is_valid():
        if request.htmx:
            return render(
                request,
                "review/_comments.html#comment-form-errors",
                {"result": result, "comment_form": form},
                status=400,
            )
        messages.error(
            request,
            "Comment not added: "
            + " ".join(" ".join(errors) for errors in form.errors.values()),
        )
        return redirect(_safe_next(request, fallback))
    try:
        comment = services_queue.comment_create(
            result=result, user=request.user, body=form.cleaned_data["body"]
        )
    except ApplicationError as exc:
        return HttpResponse(exc.message, status=exc.status_code)
    if request.htmx:
        return render(
            request, "review/_comments.html#comment", {"comment": comment}, status=201
        )
    messages.success(request, "Comment added.")
    return redirect(_safe_next(request, fallback))


# ---------------------------------------------------------------- audit


@require_GET
def run_audit(request: HttpRequest, project_id: int, run_id: int) -> HttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Invalid filters.", status=400, content_type="text/plain")
    action = form.cleaned_data.get("action") or ""
    page_obj = Paginator(
        audit_list_for_run(run=run, action=action), AUDIT_PAGE_SIZE
    ).get_page(form.cleaned_data.get("page") or 1)
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
    template = "review/audit.html"
    if request.htmx:
        template += "#audit-events"
    return render(request, template, context)


@require_GET
def result_audit(request: HttpRequest, project_id: int, result_id: int) -> HttpResponse:
    """The per-item audit partial (D1's item page includes the same template)."""
    result = result_get_for_user(user=request.user, pk=result_id, project_id=project_id)
    return render(
        request,
        "review/_audit.html",
        {"events": audit_list_for_result(result=result)[:200], "result": result},
    )
