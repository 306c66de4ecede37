from __future__ import annotations

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.review"

    def ready(self) -> None:
        from evalsite.accounts.selectors import on_audit_read
        from evalsite.review.selectors.blind import audit_mask_blind

        # The project's audit log (accounts, below review) hides a blind result's
        # verdict as the run's does.
        on_audit_read(
            lambda events, user, project: audit_mask_blind(
                events, user=user, project_id=project.pk, project=project
            )
        )
