from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_ratelimit.core import get_usage

from evalsite.accounts import services
from evalsite.accounts.backends import LOGIN_THROTTLED_MESSAGE, login_throttled
from evalsite.accounts.forms import (
    AccessLogForm,
    ApiTokenForm,
    AuditLogForm,
    InvitationForm,
    InvitationSignupForm,
    MemberCreateForm,
    MemberForm,
    MemberRoleForm,
    ProjectForm,
    ProjectSettingsForm,
)
from evalsite.accounts.models import (
    ApiToken,
    InvitationStatus,
    Membership,
    Project,
    Role,
)
from evalsite.accounts.selectors import (
    audit_event_list_for,
    audit_filter_choices,
    invitation_find,
    invitation_get_for_user,
    invitation_list_for_invitee,
    invitation_list_pending,
    membership_event_list_for,
    membership_get_for_user,
    membership_list,
    project_create_allowed,
    project_get_for_user,
    project_list_for_user,
    project_overview,
    require_project_create,
)
from evalsite.accounts.services import (
    INVITATION_DAYS_MAX,
    INVITATION_GONE_MESSAGES,
    InvitationGoneError,
)
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest, HtmxHttpRequest
from evalsite.lib.forms import form_add_application_error
from evalsite.lib.htmx import partial, redirect_htmx, vary_on_htmx


class LoginView(auth_views.LoginView):
    """The login page; the throttle itself lives in the authentication backend (it
    covers the admin's login too), this only answers a throttled client with 429."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.LOCAL_LOGIN_ENABLED:
            # The backends refuse passwords too; this says why (single sign-on only).
            messages.error(request, "Password login is turned off: use single sign-on.")
            return self.render_to_response(self.get_context_data(), status=403)
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
        "invitations_for_me": invitation_list_for_invitee(user=request.user),
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


ACCESS_LOG_PAGE_SIZE = 25
AUDIT_PAGE_SIZE = 50


def _settings_page(
    request: AuthenticatedHttpRequest,
    project: Project,
    *,
    status: int = 200,
    **context: object,
) -> HttpResponse:
    """The settings page (project, members, invitations, access log), with any of its
    forms given bound (their errors shown) and `status` (400 when a form failed).

    A GET from htmx with ?page= is the access log's pager: it gets only that region."""
    log_page = 1
    if request.method == "GET":
        log_form = AccessLogForm(request.GET)
        if not log_form.is_valid():
            return HttpResponse("Invalid page.", status=400, content_type="text/plain")
        log_page = log_form.cleaned_data.get("page") or 1
    can_manage = project.membership.can_manage
    events = Paginator(
        membership_event_list_for(project=project, membership=project.membership),
        ACCESS_LOG_PAGE_SIZE,
    ).get_page(log_page)
    full: dict[str, object] = {
        "project": project,
        "form": _project_settings_form(project),
        "member_form": MemberForm(),
        "member_create_form": MemberCreateForm(),
        "invitation_form": InvitationForm(),
        "memberships": membership_list(project=project),
        # Pending invitations name their invitees: owners' business, like managing them.
        "invitations": invitation_list_pending(project=project) if can_manage else [],
        "events": events,
        "roles": Role.choices,
        "invitation_days_max": INVITATION_DAYS_MAX,
        **context,
    }
    template = "accounts/settings.html"
    if request.method == "GET":
        template = partial(request, template, "access-log")
    return render(request, template, full, status=status)


def _project_settings_form(project: Project) -> ProjectSettingsForm:
    return ProjectSettingsForm(
        initial={
            "name": project.name,
            "description": project.description,
            "blind_review": project.blind_review,
            "reviewers_can_start_runs": project.reviewers_can_start_runs,
            "reviewers_can_save_rescore": project.reviewers_can_save_rescore,
            "default_overlap": project.default_overlap,
        }
    )


@require_GET
@vary_on_htmx
def audit_log(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """The project's audit log, filtered and paged; htmx asks for the events only."""
    project = project_get_for_user(user=request.user, pk=project_id)
    form = AuditLogForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Invalid filters.", status=400, content_type="text/plain")
    filters = form.filters()
    events = audit_event_list_for(project=project, user=request.user, filters=filters)
    page_obj = Paginator(events, AUDIT_PAGE_SIZE).get_page(
        form.cleaned_data.get("page") or 1
    )
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "project": project,
        "page_obj": page_obj,
        "filters": filters,
        "choices": audit_filter_choices(project=project),
        "query": query.urlencode(),
        "audit_url": reverse("accounts:audit", args=[project.pk]),
        "export_url": reverse("exports:audit_csv", args=[project.pk]),
    }
    template = partial(request, "accounts/audit/log.html", "audit-events")
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def project_settings(
    request: AuthenticatedHttpRequest, project_id: int
) -> HttpResponse:
    project = project_get_for_user(
        user=request.user, pk=project_id, manage=request.method == "POST"
    )
    if request.method == "GET":
        return _settings_page(request, project)
    form = ProjectSettingsForm(request.POST)
    if form.is_valid():
        services.project_update(
            project=project, actor=request.user, **form.cleaned_data
        )
        messages.success(request, "Project settings saved.")
        return redirect("accounts:settings", project_id=project.pk)
    return _settings_page(request, project, form=form)


@require_POST
def member_set(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """Invite an existing user by username (they join when they accept), or change a
    member's role. An unknown name gets the same answer as an invitation sent."""
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    form = MemberForm(request.POST)
    if form.is_valid():
        username = form.cleaned_data["username"].strip()
        role = form.cleaned_data["role"]
        try:
            membership = services.member_add(
                project=project, actor=request.user, username=username, role=role
            )
        except ApplicationError as exc:
            form_add_application_error(form, exc)
        else:
            if membership is not None:
                messages.success(
                    request, f"{membership.user} is now {_role_label(role)}."
                )
            else:
                messages.success(
                    request,
                    services.member_invite_message(username=username, role=role),
                )
            return redirect("accounts:settings", project_id=project.pk)
    return _settings_page(request, project, status=400, member_form=form)


@require_POST
def member_role(
    request: AuthenticatedHttpRequest, project_id: int, membership_id: int
) -> HttpResponse:
    """Change one member's role (the select on their row of the members list)."""
    membership = membership_get_for_user(
        user=request.user, project_id=project_id, pk=membership_id, manage=True
    )
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
    else:
        try:
            services.membership_set(
                project=membership.project,
                user=membership.user,
                role=form.cleaned_data["role"],
                actor=request.user,
            )
        except ApplicationError as exc:
            messages.error(request, f"{membership.user}: {exc.message}")
        else:
            messages.success(
                request,
                f"{membership.user} is now {_role_label(form.cleaned_data['role'])}.",
            )
    return redirect("accounts:settings", project_id=project_id)


@require_POST
def member_create(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    """Create an account and add it to the project. A password the owner typed is not
    shown again; a generated one is shown on this response only."""
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    form = MemberCreateForm(request.POST)
    if form.is_valid():
        try:
            membership, generated = services.member_create(
                project=project, actor=request.user, **form.cleaned_data
            )
        except ApplicationError as exc:
            form_add_application_error(form, exc)
        else:
            messages.success(
                request,
                f"Account {membership.user} created and added as "
                f"{_role_label(membership.role)}.",
            )
            if not generated:
                return redirect("accounts:settings", project_id=project.pk)
            return _settings_page(
                request,
                project,
                new_user={
                    "username": membership.user.get_username(),
                    "password": generated,
                },
            )
    return _settings_page(request, project, status=400, member_create_form=form)


def _role_label(role: str) -> str:
    return str(Role(role).label).lower()


@require_http_methods(["GET", "POST"])
@vary_on_htmx
def member_remove(
    request: AuthenticatedHttpRequest, project_id: int, membership_id: int
) -> HttpResponse:
    """GET, or a POST without `confirm=yes`: the confirmation page (so removal needs a
    second, deliberate step without JS too). POST with it: remove. htmx sends the
    confirmation itself after the browser's hx-confirm dialog."""
    membership = membership_get_for_user(
        user=request.user, project_id=project_id, pk=membership_id, manage=True
    )
    project = membership.project
    if request.method == "GET" or request.POST.get("confirm") != "yes":
        return render(
            request,
            "accounts/member_remove.html",
            {"project": project, "membership": membership},
        )
    try:
        services.membership_remove(membership=membership, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Removed {membership.user}.")
    return redirect_htmx(request, reverse("accounts:settings", args=[project.pk]))


# ------------------------------------------------------------------ invitations


@require_POST
def invitation_create(
    request: AuthenticatedHttpRequest, project_id: int
) -> HttpResponse:
    """Create an invitation; its link is shown on this response only."""
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    form = InvitationForm(request.POST)
    if form.is_valid():
        try:
            invitation, raw = services.invitation_create(
                project=project, actor=request.user, **form.cleaned_data
            )
        except ApplicationError as exc:
            form_add_application_error(form, exc)
        else:
            link = request.build_absolute_uri(reverse("accounts:invite", args=[raw]))
            return _settings_page(
                request,
                project,
                new_invitation={"invitation": invitation, "link": link},
            )
    return _settings_page(request, project, status=400, invitation_form=form)


@require_POST
def invitation_respond(
    request: AuthenticatedHttpRequest, invitation_id: int
) -> HttpResponse:
    """The invitee of an invitation to their account accepts (answer=accept) or
    declines it, from their dashboard."""
    try:
        if request.POST.get("answer") != "accept":
            services.invitation_decline(invitation_id=invitation_id, user=request.user)
            messages.success(request, "Invitation declined.")
            return redirect("accounts:dashboard")
        membership = services.invitation_accept_invited(
            invitation_id=invitation_id, user=request.user
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("accounts:dashboard")
    messages.success(
        request,
        f"You joined {membership.project.name} as {_role_label(membership.role)}.",
    )
    return redirect("accounts:project", project_id=membership.project_id)


@require_POST
def invitation_revoke(
    request: AuthenticatedHttpRequest, project_id: int, invitation_id: int
) -> HttpResponse:
    invitation = invitation_get_for_user(
        user=request.user, project_id=project_id, pk=invitation_id, manage=True
    )
    try:
        services.invitation_revoke(invitation=invitation, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Invitation revoked: its link no longer works.")
    return redirect("accounts:settings", project_id=project_id)


def _invite_throttled(request: HttpRequest) -> bool:
    """Count one request that could guess or spend a link against the client address;
    whether that address is over INVITE_RATE_PER_IP."""
    rate = settings.INVITE_RATE_PER_IP
    if not rate:
        return False
    usage = get_usage(
        request, group="accounts.invite.ip", key="ip", rate=rate, increment=True
    )
    return usage is not None and bool(usage["should_limit"])


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def invite(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """An invitation link: a signed-in user accepts it, a visitor creates an account
    and joins. A used, revoked or expired link answers 410 with why; an unknown one
    404; too many tries from one address 429."""
    invitation = invitation_find(token=token)
    if (invitation is None or request.method == "POST") and _invite_throttled(request):
        return render(request, "accounts/invite.html", {"throttled": True}, status=429)
    if invitation is None:
        raise Http404("No such invitation.")
    context: dict[str, object] = {"invitation": invitation, "token": token}
    status = invitation.status()
    if status != InvitationStatus.PENDING:
        context["gone"] = INVITATION_GONE_MESSAGES[status]
        return render(request, "accounts/invite.html", context, status=410)
    user = request.user
    if user.is_authenticated:
        context["membership"] = Membership.objects.filter(
            project_id=invitation.project_id, user=user
        ).first()
    form = InvitationSignupForm(initial={"email": invitation.email})
    if request.method == "POST":
        if not user.is_authenticated:
            form = InvitationSignupForm(request.POST)
        try:
            if user.is_authenticated:
                membership = services.invitation_accept(token=token, user=user)
            elif form.is_valid():
                membership = services.invitation_signup(
                    token=token,
                    username=form.cleaned_data["username"],
                    email=form.cleaned_data["email"],
                    password=form.cleaned_data["password"],
                )
                login(request, membership.user)
            else:
                context["form"] = form
                return render(request, "accounts/invite.html", context, status=400)
        except InvitationGoneError as exc:
            context["gone"] = exc.message
            return render(request, "accounts/invite.html", context, status=410)
        except ApplicationError as exc:
            if user.is_authenticated:
                context["error"] = exc.message
            else:
                form_add_application_error(form, exc)
            context["form"] = form
            return render(
                request, "accounts/invite.html", context, status=exc.status_code
            )
        messages.success(
            request,
            f"Welcome to {membership.project.name}: you are "
            f"{_role_label(membership.role)} here.",
        )
        return redirect("accounts:project", project_id=membership.project_id)
    context["form"] = form
    return render(request, "accounts/invite.html", context)


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
