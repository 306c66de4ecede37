from __future__ import annotations

from django.urls import path

from evalsite.core.views import placeholder

app_name = "datasets"
urlpatterns = [
    path(
        "projects/<int:project_id>/datasets/",
        placeholder,
        {"title": "Datasets"},
        name="list",
    ),
]
