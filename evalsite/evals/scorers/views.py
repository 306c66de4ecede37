"""HTML views of scorers (thin: authorise, call a service, render)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.judges import selectors as judge_selectors
from evalsite.evals.scorers import selectors, services
from evalsite.evals.scorers.forms import ScorerForm
from evalsite.evals.scorers.services import SCORER_KINDS
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import partial, vary_on_htmx
from scoring import KINDS


@require_GET
def scorer_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    archived = request.GET.get("archived") == "1"
    return render(
        request,
        "evals/scorers/scorers.html",
        {
            "project": project,
            "archived": archived,
            "scorers": selectors.scorer_list(project_id=project.pk, archived=archived),
            "kinds": KINDS,
        },
    )


def _render_scorer_form(
    request: AuthenticatedHttpRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    template = "evals/scorers/scorer_form.html"
    if request.method == "GET":
        template = partial(request, template, "scorer-kind-fields")
    return render(request, template, context, status=status)


def _default_name(typed: str, kind: str) -> str:
    """The name the create form shows for `kind`: what was typed (the form re-shown
    without JavaScript for another kind), unless it is empty or another kind's default
    name, which follows the kind."""
    typed = typed.strip()[:200]
    if not typed or typed in {KINDS[k].label for k in SCORER_KINDS}:
        return KINDS[kind].label
    return typed


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def scorer_create(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    kind = request.POST.get("kind") or request.GET.get("kind") or "faithfulness"
    if kind not in SCORER_KINDS:
        return HttpResponse(
            "Unknown scorer kind, or one that needs data datasets cannot hold yet.",
            status=400,
        )
    if request.method == "POST":
        form = ScorerForm(request.POST, project_id=project.pk, kind=kind)
        if form.is_valid():
            try:
                scorer = services.scorer_create(
                    project=project,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    kind=kind,
                    judge=form.cleaned_data.get("judge"),
                    options=form.options(),
                )
            except ApplicationError as exc:
                form_add_application_error(form, exc, field_for=form.field_for)
            else:
                messages.success(request, f"Scorer “{scorer.name}” created.")
                return redirect("evals:scorers", project_id=project.pk)
        return _render_scorer_form(
            request, {"project": project, "form": form, "scorer": None}, 400
        )
    offline = (
        judge_selectors.judge_list(project_id=project.pk)
        .filter(is_offline=True)
        .first()
    )
    form = ScorerForm(
        project_id=project.pk,
        kind=kind,
        initial={
            "name": _default_name(request.GET.get("name", ""), kind),
            "judge": offline,
        },
    )
    return _render_scorer_form(
        request, {"project": project, "form": form, "scorer": None}
    )


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def scorer_edit(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    scorer = selectors.scorer_get_for_user(
        user=request.user, pk=pk, project_id=project_id, write=True
    )
    if request.method == "POST":
        form = ScorerForm(
            request.POST,
            project_id=project_id,
            kind=scorer.kind,
            current_options=scorer.options,
            current_judge_id=scorer.judge_id,
        )
        if form.is_valid():
            try:
                saved = services.scorer_update(
                    scorer=scorer,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    judge=form.cleaned_data.get("judge"),
                    options=form.options(),
                )
            except ApplicationError as exc:
                form_add_application_error(form, exc, field_for=form.field_for)
            else:
                note = (
                    f" (new version {saved.version})" if saved.pk != scorer.pk else ""
                )
                messages.success(request, f"Scorer “{saved.name}” saved{note}.")
                return redirect("evals:scorers", project_id=project_id)
        return _render_scorer_form(
            request, {"project": scorer.project, "form": form, "scorer": scorer}, 400
        )
    form = ScorerForm(
        project_id=project_id,
        kind=scorer.kind,
        current_options=scorer.options,
        current_judge_id=scorer.judge_id,
        initial={"name": scorer.name, "judge": scorer.judge},
    )
    return _render_scorer_form(
        request, {"project": scorer.project, "form": form, "scorer": scorer}
    )
