from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.accounts import services
from evalsite.accounts.backends import LOGIN_THROTTLED_MESSAGE, login_throttled
from evalsite.accounts.forms import (
    ApiTokenForm,
    MemberForm,
    ProjectForm,
    ProjectSettingsForm,
)
from evalsite.accounts.models import ApiToken, Membership
from evalsite.accounts.selectors import (
    project_create_allowed,
    project_get_for_user,
    project_list_for_user,
    project_overview,
    require_project_create,
)
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.lib.htmx import redirect_htmx, vary_on_htmx


class LoginView(auth_views.LoginView):
    """The login page; the throttle itself lives in the authentication backend (it
    covers the admin's login too), this only answers a throttled client with 429."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if login_throttled(request, str(request.POST.get("username") or "")):
            form = self.get_form()
            form.add_error(None, LOGIN_THROTTLED_MESSAGE)
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)


def _dashboard_context(
    request: AuthenticatedHttpRequest, form: ProjectForm
) -> dict[str, object]:
    return {
        "projects": project_list_for_user(user=request.user),
        "form": form,
        "can_create_project": project_create_allowed(user=request.user),
    }


@require_GET
def dashboard(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(
        request, "accounts/dashboard.html", _dashboard_context(request, ProjectForm())
    )


@require_POST
def project_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_project_create(user=request.user)
    form = ProjectForm(request.POST)
    if form.is_valid():
        try:
            project = services.project_create(
                user=request.user,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
            )
        except ApplicationError as exc:
            form.add_error("name", exc.message)
        else:
            messages.success(request, f"Project “{project.name}” created.")
            return redirect("accounts:project", project_id=project.pk)
    return render(
        request,
        "accounts/dashboard.html",
        _dashboard_context(request, form),
        status=400,
    )


@require_GET
def project_detail(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    overview = project_overview(project=project, user=request.user)
    return render(request, "accounts/project.html", {"project": project, **overview})


@require_http_methods(["GET", "POST"])
def project_settings(
    request: AuthenticatedHttpRequest, project_id: int
) -> HttpResponse:
    project = project_get_for_user(
        user=request.user, pk=project_id, manage=request.method == "POST"
    )
    if request.method == "POST":
        form = ProjectSettingsForm(request.POST)
        if form.is_valid():
            services.project_update(
                project=project, actor=request.user, **form.cleaned_data
            )
            messages.success(request, "Project settings saved.")
            return redirect("accounts:settings", project_id=project.pk)
    else:
        form = ProjectSettingsForm(
            initial={
                "name": project.name,
                "description": project.description,
                "blind_review": project.blind_review,
                "reviewers_can_start_runs": project.reviewers_can_start_runs,
                "reviewers_can_save_rescore": project.reviewers_can_save_rescore,
            }
        )
    memberships = (
        Membership.objects.filter(project=project)
        .select_related("user")
        .order_by("user__username")
    )
    return render(
        request,
        "accounts/settings.html",
        {
            "project": project,
            "form": form,
            "member_form": MemberForm(),
            "memberships": memberships,
        },
    )


@require_POST
def member_set(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    form = MemberForm(request.POST)
    if form.is_valid():
        user = (
            get_user_model()
            .objects.filter(username=form.cleaned_data["username"])
            .first()
        )
        if user is None:
            messages.error(request, f"No user named “{form.cleaned_data['username']}”.")
        else:
            try:
                services.membership_set(
                    project=project, user=user, role=form.cleaned_data["role"]
                )
            except ApplicationError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, f"{user} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Give a username and a role.")
    return redirect("accounts:settings", project_id=project.pk)


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def member_remove(
    request: AuthenticatedHttpRequest, project_id: int, membership_id: int
) -> HttpResponse:
    """GET, or a POST without `confirm=yes`: the confirmation page (so removal needs a
    second, deliberate step without JS too). POST with it: remove. htmx sends the
    confirmation itself after the browser's hx-confirm dialog."""
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), pk=membership_id, project=project
    )
    if request.method == "GET" or request.POST.get("confirm") != "yes":
        return render(
            request,
            "accounts/member_remove.html",
            {"project": project, "membership": membership},
        )
    try:
        services.membership_remove(membership=membership)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Removed {membership.user}.")
    return redirect_htmx(request, reverse("accounts:settings", args=[project.pk]))


@require_http_methods(["GET", "POST"])
def api_tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    new_token = None
    form = ApiTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        _, new_token = services.api_token_create(
            user=request.user, name=form.cleaned_data["name"]
        )
        form = ApiTokenForm()
    tokens = ApiToken.objects.filter(user=request.user)
    return render(
        request,
        "accounts/tokens.html",
        {"tokens": tokens, "form": form, "new_token": new_token},
    )


@require_POST
def api_token_revoke(request: AuthenticatedHttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    services.api_token_revoke(token=token)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("accounts:tokens")
