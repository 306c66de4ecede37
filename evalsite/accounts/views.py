from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_ratelimit.decorators import ratelimit

from evalsite.accounts import services
from evalsite.accounts.forms import (
    ApiTokenForm,
    MemberForm,
    ProjectForm,
    ProjectSettingsForm,
)
from evalsite.accounts.models import ApiToken, Membership
from evalsite.accounts.selectors import (
    project_get_for_user,
    project_list_for_user,
    project_overview,
)
from evalsite.core.exceptions import ApplicationError


@method_decorator(
    ratelimit(key="ip", rate="10/m", method="POST", block=False), name="dispatch"
)
class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:  # type: ignore[no-untyped-def]
        if getattr(request, "limited", False):
            form = self.get_form()
            form.add_error(
                None, "Too many login attempts. Wait a minute and try again."
            )
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    projects = project_list_for_user(user=request.user)
    return render(
        request,
        "accounts/dashboard.html",
        {"projects": projects, "form": ProjectForm()},
    )


@require_POST
def project_create(request: HttpRequest) -> HttpResponse:
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
    projects = project_list_for_user(user=request.user)
    return render(
        request,
        "accounts/dashboard.html",
        {"projects": projects, "form": form},
        status=400,
    )


@require_GET
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    overview = project_overview(project=project, user=request.user)
    return render(request, "accounts/project.html", {"project": project, **overview})


@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest, project_id: int) -> HttpResponse:
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
def member_set(request: HttpRequest, project_id: int) -> HttpResponse:
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
            services.membership_set(
                project=project, user=user, role=form.cleaned_data["role"]
            )
            messages.success(request, f"{user} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Give a username and a role.")
    return redirect("accounts:settings", project_id=project.pk)


@require_POST
def member_remove(
    request: HttpRequest, project_id: int, membership_id: int
) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    membership = get_object_or_404(Membership, pk=membership_id, project=project)
    try:
        services.membership_remove(membership=membership)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Removed {membership.user}.")
    return redirect("accounts:settings", project_id=project.pk)


@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
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
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    services.api_token_revoke(token=token)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("accounts:tokens")
