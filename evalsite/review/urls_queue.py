from __future__ import annotations

from django.urls import path

from evalsite.core.views import placeholder

# Results explorer, review queue, assignments, comments, audit pages (helper D2).
urlpatterns: list = [
    path("projects/<int:project_id>/queue/", placeholder, {"title": "My queue"}, name="assigned"),
]
