"""Guidelines pages: a project's and a queue's markdown instructions, their versions,
a preview, and the editor (owners and adjudicators)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.lib.htmx import vary_on_htmx, wants_partial
from evalsite.lib.markdown import markdown_to_html
from evalsite.review.guidelines.forms import GuidelineForm
from evalsite.review.guidelines.selectors import (
    GuidelineScope,
    guideline_current,
    guideline_history,
    guideline_html,
    guideline_latest,
    guideline_scope_for_user,
)
from evalsite.review.guidelines.services import guideline_save


def _page_url(scope: GuidelineScope) -> str:
    if scope.queue is not None:
        return reverse(
            "review:queue_guidelines", args=[scope.project.pk, scope.queue.pk]
        )
    return reverse("review:project_guidelines", args=[scope.project.pk])


def _context(
    scope: GuidelineScope, form: GuidelineForm | None = None, preview: Any = None
) -> dict[str, Any]:
    project_id = scope.project.pk
    queue_id = scope.queue.pk if scope.queue is not None else None
    latest = guideline_latest(project_id=project_id, queue_id=queue_id)
    history = guideline_history(project_id=project_id, queue_id=queue_id)
    if form is None:
        form = GuidelineForm(
            initial={
                "body": latest.body if latest else "",
                "version": latest.version if latest else 0,
            }
        )
    # For a queue: the guidelines reviewers actually see (the project's when the
    # queue has none of its own).
    current = guideline_current(project_id=project_id, queue_id=queue_id)
    return {
        "project": scope.project,
        "queue": scope.queue,
        "run": scope.queue.run if scope.queue is not None else None,
        "can_edit": scope.can_edit,
        "latest": latest,
        "current": current,
        "current_html": guideline_html(current) if current else "",
        "history": [(g, guideline_html(g)) for g in history],
        "form": form,
        "preview": preview,
        "page_url": _page_url(scope),
        "project_url": reverse("review:project_guidelines", args=[project_id]),
    }


def _guidelines(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int | None
) -> HttpResponse:
    """GET: the guidelines, their versions and (for editors) the editor.

    POST with `preview`: the text as reviewers will see it, nothing saved (htmx swaps
    the preview region; without JS the page comes back with the preview and the text).
    POST: save the next version, then back to the page.
    """
    scope = guideline_scope_for_user(
        user=request.user,
        project_id=project_id,
        queue_id=queue_id,
        edit=request.method == "POST",
    )
    if request.method == "GET":
        return render(request, "review/guidelines/guidelines.html", _context(scope))
    form = GuidelineForm(request.POST)
    if not form.is_valid():
        if wants_partial(request) and "preview" in request.POST:
            return render(
                request,
                "review/guidelines/guidelines.html#guideline-preview",
                {"preview": None, "form": form},
            )
        return render(
            request,
            "review/guidelines/guidelines.html",
            _context(scope, form=form),
            status=400,
        )
    body = form.cleaned_data["body"] or ""
    if "preview" in request.POST:
        preview = markdown_to_html(body)
        if wants_partial(request):
            return render(
                request,
                "review/guidelines/guidelines.html#guideline-preview",
                {"preview": preview, "form": form},
            )
        return render(
            request,
            "review/guidelines/guidelines.html",
            _context(scope, form=form, preview=preview),
        )
    try:
        saved = guideline_save(
            project=scope.project,
            queue=scope.queue,
            body=body,
            user=request.user,
            expected_version=form.cleaned_data.get("version"),
        )
    except ApplicationError as exc:
        form.add_error(None, exc.message)
        return render(
            request,
            "review/guidelines/guidelines.html",
            _context(scope, form=form),
            status=exc.status_code,
        )
    if saved.version == form.cleaned_data.get("version"):
        messages.info(request, f"No change: version {saved.version} stays in force.")
    else:
        messages.success(request, f"Guidelines saved as version {saved.version}.")
    return redirect(_page_url(scope))


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def project_guidelines(
    request: AuthenticatedHttpRequest, project_id: int
) -> HttpResponse:
    return _guidelines(request, project_id, None)


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def queue_guidelines(
    request: AuthenticatedHttpRequest, project_id: int, queue_id: int
) -> HttpResponse:
    return _guidelines(request, project_id, queue_id)
