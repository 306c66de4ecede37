from __future__ import annotations

from django.urls import path

from evalsite.exports import views

app_name = "exports"
urlpatterns = [
    path(
        "projects/<int:project_id>/audit/export.csv",
        views.audit_csv,
        name="audit_csv",
    ),
    path(
        "projects/<int:project_id>/runs/<int:run_id>/export.csv",
        views.run_csv,
        name="run_csv",
    ),
    path(
        "projects/<int:project_id>/runs/<int:run_id>/estimates.csv",
        views.run_estimates_csv,
        name="run_estimates_csv",
    ),
    path(
        "projects/<int:project_id>/runs/<int:run_id>/export.jsonl",
        views.run_jsonl,
        name="run_jsonl",
    ),
    path(
        "projects/<int:project_id>/runs/<int:run_id>/export.parquet",
        views.run_parquet,
        name="run_parquet",
    ),
    path(
        "projects/<int:project_id>/datasets/<int:dataset_id>/export.csv",
        views.dataset_csv,
        name="dataset_csv",
    ),
    path(
        "projects/<int:project_id>/datasets/<int:dataset_id>/export.jsonl",
        views.dataset_jsonl,
        name="dataset_jsonl",
    ),
    path(
        "projects/<int:project_id>/pairwise/<int:pairwise_id>/export.csv",
        views.pairwise_export_csv,
        name="pairwise_export_csv",
    ),
    path(
        "projects/<int:project_id>/pairwise/<int:pairwise_id>/export.jsonl",
        views.pairwise_export_jsonl,
        name="pairwise_export_jsonl",
    ),
]
