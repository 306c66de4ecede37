from __future__ import annotations

from django.apps import AppConfig


class EvalsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.evals"

    def ready(self) -> None:
        # Imported here, not at the top: models may be imported only once apps load.
        from evalsite.accounts.selectors import on_project_overview
        from evalsite.accounts.services import on_project_created

        # The services send the tasks by name (evals.runs.services); importing the
        # module registers them in this process too, which eager tests need.
        from evalsite.evals import tasks  # noqa: F401
        from evalsite.evals.judges.services import judge_create_offline
        from evalsite.evals.runs.selectors import project_overview_part

        # Every project starts with the built-in offline heuristic judge connection.
        on_project_created(judge_create_offline)
        on_project_overview(project_overview_part)

        from django.core import checks

        from evalsite.evals.checks import check_judge_key_env_allowed

        checks.register(check_judge_key_env_allowed)
