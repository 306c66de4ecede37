from __future__ import annotations

from django.urls import path

from evalsite.core.views import placeholder

app_name = "review"
urlpatterns = [
    path(
        "projects/<int:project_id>/queue/",
        placeholder,
        {"title": "My queue"},
        name="assigned",
    ),
]
