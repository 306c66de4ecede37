from __future__ import annotations

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evalsite.review"

    def ready(self) -> None:
        from evalsite.datasets.services import on_dataset_version
        from evalsite.evals.selectors import on_run_aggregates
        from evalsite.review.selectors.estimates import (
            run_aggregates_with_estimates,
        )
        from evalsite.review.tasks import dataset_versions_match_on_commit

        on_run_aggregates(run_aggregates_with_estimates)
        on_dataset_version(dataset_versions_match_on_commit)
