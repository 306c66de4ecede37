from __future__ import annotations

from django.urls import path

from evalsite.core.views import placeholder

app_name = "evals"
urlpatterns = [
    path(
        "projects/<int:project_id>/judges/",
        placeholder,
        {"title": "Judges"},
        name="judges",
    ),
    path(
        "projects/<int:project_id>/scorers/",
        placeholder,
        {"title": "Scorers"},
        name="scorers",
    ),
    path(
        "projects/<int:project_id>/runs/", placeholder, {"title": "Runs"}, name="runs"
    ),
]
