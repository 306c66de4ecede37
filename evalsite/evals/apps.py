from __future__ import annotations

from django.apps import AppConfig


class EvalsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.evals"

    def ready(self) -> None:
        from evalsite.accounts.services import on_project_created
        from evalsite.evals.services.judges import judge_create_offline

        # Every project starts with the built-in offline heuristic judge connection.
        on_project_created(judge_create_offline)
        # Running runs get a watchdog on every worker (re)connection: see
        # evalsite.celery.RecoverRunsOnConnect.
