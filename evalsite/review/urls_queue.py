from __future__ import annotations

from django.urls import path

from evalsite.review import views_queue as views

# Results explorer, review queue, assignments, comments, audit pages (helper D2).
P = "projects/<int:project_id>/"
urlpatterns: list = [
    path(f"{P}runs/<int:run_id>/results/", views.explorer, name="explorer"),
    path(f"{P}runs/<int:run_id>/queues/", views.queue_create, name="queue_create"),
    path(f"{P}runs/<int:run_id>/audit/", views.run_audit, name="run_audit"),
    path(f"{P}queues/<int:queue_id>/", views.queue_detail, name="queue"),
    path(
        f"{P}queues/<int:queue_id>/<int:position>/<slug:action>/",
        views.queue_action,
        name="queue_action",
    ),
    path(f"{P}queue/", views.assigned, name="assigned"),
    path(f"{P}results/<int:result_id>/comments/", views.comments, name="comments"),
    path(f"{P}results/<int:result_id>/audit/", views.result_audit, name="result_audit"),
]
