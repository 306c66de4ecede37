from __future__ import annotations

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.review"

    def ready(self) -> None:
        from evalsite.accounts.selectors import on_audit_read
        from evalsite.datasets.services import on_dataset_version
        from evalsite.evals.selectors import on_run_aggregates
        from evalsite.review.selectors.blind import audit_mask_blind
        from evalsite.review.selectors.estimates import (
            run_aggregates_with_estimates,
        )
        from evalsite.review.tasks import dataset_versions_match_on_commit

        on_run_aggregates(run_aggregates_with_estimates)
        on_dataset_version(dataset_versions_match_on_commit)
        # The project's audit log hides a blind result's verdict as the run's does.
        on_audit_read(
            lambda events, user, project: audit_mask_blind(
                events, user=user, project_id=project.pk, project=project
            )
        )
