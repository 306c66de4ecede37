"""Pages: a project's webhooks (owners only), each one's delivery log and redeliver."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.lib.forms import form_add_application_error
from evalsite.webhooks import selectors, services
from evalsite.webhooks.forms import WebhookForm


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("secret")
@sensitive_variables("fields", "form")
def webhook_list(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id, manage=True)
    status = 200
    if request.method == "POST":
        form = WebhookForm(request.POST, project_id=project.pk)
        if form.is_valid():
            try:
                webhook = services.webhook_create(
                    project=project, user=request.user, **form.service_fields()
                )
            except ApplicationError as exc:
                form_add_application_error(form, exc)
            else:
                messages.success(request, f"Webhook “{webhook.name}” created.")
                return redirect("webhooks:list", project_id=project.pk)
        status = 400
    else:
        form = WebhookForm(project_id=project.pk)
    return render(
        request,
        "webhooks/webhooks.html",
        {
            "project": project,
            "webhooks": selectors.webhook_list(project_id=project.pk),
            "form": form,
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("secret")
@sensitive_variables("fields", "form")
def webhook_edit(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=pk
    )
    status = 200
    if request.method == "POST":
        form = WebhookForm(
            request.POST,
            project_id=project_id,
            initial={"baseline_run": webhook.baseline_run_id},
        )
        if form.is_valid():
            try:
                services.webhook_update(
                    webhook=webhook, user=request.user, **form.service_fields()
                )
            except ApplicationError as exc:
                form_add_application_error(form, exc)
            else:
                messages.success(request, f"Webhook “{webhook.name}” saved.")
                return redirect("webhooks:list", project_id=project_id)
        status = 400
    else:
        form = WebhookForm.for_webhook(webhook)
    return render(
        request,
        "webhooks/webhook_edit.html",
        {"project": webhook.project, "webhook": webhook, "form": form},
        status=status,
    )


@require_POST
def webhook_delete(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=pk
    )
    services.webhook_delete(webhook=webhook, user=request.user)
    messages.success(request, f"Webhook “{webhook.name}” deleted.")
    return redirect("webhooks:list", project_id=project_id)


@require_GET
def delivery_list(
    request: AuthenticatedHttpRequest, project_id: int, pk: int
) -> HttpResponse:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=pk
    )
    return render(
        request,
        "webhooks/deliveries.html",
        {
            "project": webhook.project,
            "webhook": webhook,
            "deliveries": selectors.delivery_list(webhook=webhook),
            "page_size": selectors.DELIVERY_PAGE,
        },
    )


@require_POST
def delivery_redeliver(
    request: AuthenticatedHttpRequest, project_id: int, pk: int, delivery_id: int
) -> HttpResponse:
    webhook = selectors.webhook_get_for_user(
        user=request.user, project_id=project_id, pk=pk
    )
    delivery = selectors.delivery_get(webhook=webhook, pk=delivery_id)
    services.delivery_redeliver(delivery=delivery, user=request.user)
    messages.success(request, f"Delivery #{delivery.pk} sent again.")
    return redirect("webhooks:deliveries", project_id=project_id, pk=pk)
