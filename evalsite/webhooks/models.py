"""A project's webhooks and the log of what was sent to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evalsite.accounts.models import Project
from evalsite.evals.models import Run


class Webhook(models.Model):
    """An HTTPS endpoint told about a project's events, signed per Standard Webhooks.

    The signing secret is stored encrypted (evalsite.evals.crypto) and never shown
    again once saved: pages and the API say only whether one is set."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="webhooks"
    )
    name = models.CharField(max_length=200)
    url = models.URLField(max_length=2000)
    # A list of evalsite.webhooks.events.Event values.
    events = models.JSONField(default=list)
    secret_encrypted = models.TextField()
    active = models.BooleanField(default=True)
    # compare.regression: each finished run of the project is compared with this one
    # (the paired t-interval compare shows) and a regression beyond `margin` is sent.
    baseline_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    margin = models.FloatField(default=0.0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_secret(self) -> bool:
        return bool(self.secret_encrypted)


class Delivery(models.Model):
    """One event sent (or being sent) to one webhook: the delivery log's row."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RETRYING = "retrying", "Retrying"
        SUCCEEDED = "succeeded", "Delivered"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(
        Webhook, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=40)
    # What the event is about ("run:12", "queue:3"): one delivery per webhook and
    # subject, so a task that runs twice sends nothing twice.
    event_key = models.CharField(max_length=100)
    # The webhook-id header: the receiver's idempotency key, the same on every retry.
    message_id = models.CharField(max_length=64, unique=True)
    payload = models.JSONField()
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["webhook", "event", "event_key"],
                name="webhooks_delivery_once",
            )
        ]
        indexes = [models.Index(fields=["webhook", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook_id}"
