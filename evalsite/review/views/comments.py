"""Comments on a result (list partial and add)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.results.comments import comment_create
from evalsite.evals.results.selectors import comment_list
from evalsite.evals.runs.selectors import result_get_for_user
from evalsite.lib.htmx import vary_on_htmx, wants_partial
from evalsite.review.forms import CommentForm
from evalsite.review.selectors.audit import audit_list_for_result
from evalsite.review.selectors.blind import audit_mask_blind
from evalsite.review.views.common import item_url, user_can_write


def _safe_next(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def comments(
    request: AuthenticatedHttpRequest, project_id: int, result_id: int
) -> HttpResponse:
    """GET: the comment list partial. POST: add a comment (htmx appends it)."""
    write = request.method == "POST"
    result = result_get_for_user(
        user=request.user, pk=result_id, write=write, project_id=project_id
    )
    project = result.project
    if request.method == "GET":
        return render(
            request,
            "review/_comments.html",
            {
                "result": result,
                "comments": comment_list(result=result),
                "comment_form": CommentForm(),
                "can_write": user_can_write(project),
            },
        )
    form = CommentForm(request.POST)
    fallback = item_url(project_id, result_id) or reverse(
        "review:explorer", args=[project_id, result.run_id]
    )
    if not form.is_valid():
        if wants_partial(request):
            return render(
                request,
                "review/_comments.html#comment-form-errors",
                {"result": result, "comment_form": form},
                status=400,
            )
        messages.error(
            request,
            "Comment not added: "
            + " ".join(" ".join(errors) for errors in form.errors.values()),  # type: ignore[arg-type]  # ErrorList iterates as str
        )
        return redirect(_safe_next(request, fallback))
    try:
        comment = comment_create(
            result=result, user=request.user, body=form.cleaned_data["body"]
        )
    except ApplicationError as exc:
        return HttpResponse(exc.message, status=exc.status_code)
    if wants_partial(request):
        if request.POST.get("history") == "1":
            # The item page: its History list comes back too, swapped out of band.
            return render(
                request,
                "review/_comment_response.html",
                {
                    "comment": comment,
                    "events": audit_mask_blind(
                        audit_list_for_result(result=result)[:50],
                        user=request.user,
                        project_id=result.run.project_id,
                    ),
                    "oob": True,
                },
                status=201,
            )
        return render(
            request, "review/_comments.html#comment", {"comment": comment}, status=201
        )
    messages.success(request, "Comment added.")
    return redirect(_safe_next(request, fallback))
