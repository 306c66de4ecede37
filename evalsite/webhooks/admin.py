from __future__ import annotations

from django.contrib import admin

from evalsite.webhooks.models import Delivery, Webhook


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin[Webhook]):
    list_display = ["name", "project", "url", "active"]
    # The signing secret is write-only: never shown, not even to staff.
    exclude = ["secret_encrypted"]


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin[Delivery]):
    list_display = ["id", "webhook", "event", "status", "attempts", "response_code"]
    list_filter = ["status", "event"]
