"""The Import page's URLs (its own app: the run it makes is evals', and datasets sits
below evals in the app layers)."""

from __future__ import annotations

from django.urls import path

from evalsite.imports import views

app_name = "imports"
urlpatterns = [
    path(
        "projects/<int:project_id>/datasets/import/",
        views.import_start,
        name="start",
    ),
    path(
        "projects/<int:project_id>/datasets/import/<str:token>/",
        views.import_preview_view,
        name="preview",
    ),
]
