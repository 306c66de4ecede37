from __future__ import annotations

from django.urls import path

from evalsite.evals import views

app_name = "evals"
_P = "projects/<int:project_id>/"
urlpatterns = [
    path(f"{_P}judges/", views.judge_list, name="judges"),
    path(f"{_P}judges/new", views.judge_create, name="judge_create"),
    path(f"{_P}judges/<int:pk>/", views.judge_edit, name="judge_edit"),
    path(f"{_P}judges/<int:pk>/test", views.judge_test, name="judge_test"),
    path(f"{_P}scorers/", views.scorer_list, name="scorers"),
    path(f"{_P}scorers/new", views.scorer_create, name="scorer_create"),
    path(f"{_P}scorers/<int:pk>/", views.scorer_edit, name="scorer_edit"),
    path(f"{_P}runs/", views.run_list, name="runs"),
    path(f"{_P}runs/new", views.run_create, name="run_create"),
    path(f"{_P}runs/<int:pk>/", views.run_detail, name="run_detail"),
    path(f"{_P}runs/<int:pk>/progress", views.run_progress, name="run_progress"),
    path(f"{_P}runs/<int:pk>/summary", views.run_summary, name="run_summary"),
    path(f"{_P}runs/<int:pk>/cancel", views.run_cancel, name="run_cancel"),
    path(
        f"{_P}runs/<int:pk>/retry-failed",
        views.run_retry_failed,
        name="run_retry_failed",
    ),
]
