from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.webhooks"

    def ready(self) -> None:
        # The other apps send these tasks by name (evalsite/lib/tasks.py); importing
        # the module registers them in this process too, which eager tests need.
        from evalsite.webhooks import tasks  # noqa: F401
