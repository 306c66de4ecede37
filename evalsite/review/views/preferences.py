"""The reviewer's own preferences: single-key shortcuts (WCAG 2.1.4) and advancing."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.review.forms import PreferencesForm
from evalsite.review.selectors.preferences import reviewer_preferences
from evalsite.review.services.preferences import reviewer_preferences_set


def _next_url(request: AuthenticatedHttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("review:preferences")


@require_http_methods(["GET", "POST"])
def preferences(request: AuthenticatedHttpRequest) -> HttpResponse:
    """GET: the form. POST: save, then back to `next` (the queue it was sent from)."""
    current = reviewer_preferences(request.user)
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            reviewer_preferences_set(
                user=request.user,
                keyboard_shortcuts=form.cleaned_data["keyboard_shortcuts"],
                advance_after_answer=form.cleaned_data["advance_after_answer"],
            )
            messages.success(request, "Preferences saved.")
            return redirect(_next_url(request))
    else:
        form = PreferencesForm(
            initial={
                "keyboard_shortcuts": current.keyboard_shortcuts,
                "advance_after_answer": current.advance_after_answer,
            }
        )
    return render(
        request,
        "review/preferences.html",
        {"form": form, "next": request.GET.get("next", "")},
    )
