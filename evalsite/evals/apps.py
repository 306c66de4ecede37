from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class EvalsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.evals"

    def ready(self) -> None:
        from celery.signals import worker_ready

        from evalsite.accounts.services import on_project_created
        from evalsite.evals.services.judges import judge_create_offline

        # Every project starts with the built-in offline heuristic judge connection.
        on_project_created(judge_create_offline)
        worker_ready.connect(_recover_runs_on_worker_start, weak=False)


def _recover_runs_on_worker_start(sender: Any = None, **kwargs: Any) -> None:
    from evalsite.evals.tasks import runs_recover

    runs_recover.delay()
