"""Overrides, accept and undo from the item page (htmx swaps the result panel)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.evals.models import Result
from evalsite.evals.results import verdicts
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.selectors import override_get_for_user
from evalsite.evals.results.verdicts import result_accept
from evalsite.evals.runs.selectors import result_get_for_user
from evalsite.lib.htmx import vary_on_htmx, wants_partial
from evalsite.review.forms import OverrideForm
from evalsite.review.selectors.audit import audit_list_for_result
from evalsite.review.selectors.blind import audit_mask_blind
from evalsite.review.team.services import review_override_revert
from evalsite.review.views.item import FieldError, item_page, result_panel


def _panel_response(
    request: HttpRequest,
    result: Result,
    *,
    error: str = "",
    notice: str = "",
    field_error: FieldError | None = None,
) -> HttpResponse:
    """The updated result panel + the scorer's aggregates card (hx-swap-oob) at once."""
    project = result.run.project
    # The review services copy the committed row back onto `result`; its run, scorer
    # and item are the ones loaded for the permission check.
    if result.reviewed_by_id is not None and result.reviewed_by_id == request.user.pk:
        result.reviewed_by = request.user
    panel = result_panel(
        request,
        result,
        can_write=True,
        error=error,
        notice=notice,
        field_error=field_error,
    )
    agg = run_aggregates(run_id=result.run_id, run_scorer_id=result.run_scorer_id)
    # The single-result page sends history=1 (its panel's hx-vals): its History list
    # comes back in the same response, swapped out of band.
    history = request.POST.get("history") == "1"
    return render(
        request,
        "review/_override_response.html",
        {
            "panel": panel,
            "project": project,
            "run": result.run,
            "agg": agg[0] if agg else None,
            "oob": True,
            "single": history,
            "events": audit_mask_blind(
                audit_list_for_result(result=result)[:50],
                user=request.user,
                project_id=result.run.project_id,
            )
            if history
            else None,
        },
    )


def _after_write(
    request: AuthenticatedHttpRequest,
    result: Result,
    *,
    error: str = "",
    notice: str = "",
    field_error: FieldError | None = None,
) -> HttpResponse:
    if wants_partial(request):
        return _panel_response(
            request, result, error=error, notice=notice, field_error=field_error
        )
    if field_error is not None:
        # Without JavaScript too, the page comes back with the error at its control
        # and what was typed there (a redirect would lose both).
        panel = result_panel(request, result, can_write=True, field_error=field_error)
        return item_page(request, result, panel, status=400)
    if error:
        messages.error(request, error)
    elif notice:
        messages.warning(request, notice)
    return redirect(
        reverse("review:item", args=[result.run.project_id, result.pk])
        + f"#result-panel-{result.pk}"
    )


@require_POST
@vary_on_htmx
def override_create(
    request: AuthenticatedHttpRequest, project_id: int, result_id: int
) -> HttpResponse:
    result = result_get_for_user(
        user=request.user, pk=result_id, project_id=project_id, write=True
    )
    form = OverrideForm(request.POST, scorer_kind=result.run_scorer.kind)
    if not form.is_valid():
        value_errors = form.errors.get("value")
        at = _control(request)
        if value_errors and at is not None:
            message = " ".join(str(e) for e in value_errors)
            return _after_write(
                request, result, field_error=_field_error(request, at, message)
            )
        errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())  # type: ignore[arg-type]  # ErrorList iterates as str
        return _after_write(request, result, error=f"Not saved: {errors}")
    data = form.cleaned_data
    try:
        verdicts.override_create(
            result=result,
            user=request.user,
            kind=data["kind"],
            path=data.get("path") or "",
            value=data["value"],
            note=data.get("note") or "",
            # The version the page showed: a change made meanwhile by someone else
            # refuses this one, and the panel comes back with the newest state.
            expected_version=data.get("version"),
        )
    except ApplicationError as exc:
        at = _control(request)
        if "value" in exc.field_errors and at is not None:
            # The value itself was refused (a score out of range): say so at the
            # control, keeping what was typed, rather than above the panel.
            return _after_write(
                request,
                _fresh(result),
                field_error=_field_error(
                    request, at, _sentence(exc.field_errors["value"])
                ),
            )
        return _after_write(request, _fresh(result), error=exc.message)
    return _after_write(request, result)


def _control(request: HttpRequest) -> str | None:
    """The item page control a refused value is shown at: "score" or "pass". A verdict
    is flipped with buttons offering only allowed values, so what refuses one (a stale
    page, a path that is gone) is said above the panel."""
    kind = request.POST.get("kind", "")
    return kind if kind in ("score", "pass") else None


def _field_error(request: HttpRequest, control: str, message: str) -> FieldError:
    return FieldError(
        control=control, typed=request.POST.get("value", "")[:100], message=message
    )


def _sentence(text: str) -> str:
    """A field error as the page shows it ("must be between 0 and 1" → "Must be
    between 0 and 1.")."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _fresh(result: Result) -> Result:
    """The result as committed now (after a refused write), keeping the run, scorer
    and item loaded for the permission check."""
    current = Result.objects.get(pk=result.pk)
    current.run, current.run_scorer, current.item = (
        result.run,
        result.run_scorer,
        result.item,
    )
    return current


def _shown_version(request: HttpRequest) -> int | None:
    raw = request.POST.get("version", "")
    return int(raw) if raw.isdigit() else None


@require_POST
@vary_on_htmx
def override_revert(
    request: AuthenticatedHttpRequest, project_id: int, override_id: int
) -> HttpResponse:
    override = override_get_for_user(
        user=request.user, pk=override_id, project_id=project_id, write=True
    )
    result = override.result
    try:
        review_override_revert(
            override=override,
            user=request.user,
            expected_version=_shown_version(request),
        )
    except ApplicationError as exc:
        return _after_write(request, _fresh(result), error=exc.message)
    return _after_write(request, result)


@require_POST
@vary_on_htmx
def accept(
    request: AuthenticatedHttpRequest, project_id: int, result_id: int
) -> HttpResponse:
    result = result_get_for_user(
        user=request.user, pk=result_id, project_id=project_id, write=True
    )
    try:
        result_accept(
            result=result,
            user=request.user,
            expected_version=_shown_version(request),
        )
    except ApplicationError as exc:
        return _after_write(request, _fresh(result), error=exc.message)
    return _after_write(request, result)
