"""The Import page's URLs, mounted by evalsite/urls.py (the page lives in review because
the run it makes is the evals app's; datasets sits below evals in the app layers)."""

from __future__ import annotations

from django.urls import path

from evalsite.review.views import imports

app_name = "imports"
urlpatterns = [
    path(
        "projects/<int:project_id>/datasets/import/",
        imports.import_start,
        name="start",
    ),
    path(
        "projects/<int:project_id>/datasets/import/<str:token>/",
        imports.import_preview_view,
        name="preview",
    ),
]
