from __future__ import annotations

from django.urls import path

from evalsite.evals.audits import views as audits
from evalsite.evals.judges import views as judges
from evalsite.evals.runs import views as runs
from evalsite.evals.scorers import views as scorers

app_name = "evals"
_P = "projects/<int:project_id>/"
urlpatterns = [
    path(f"{_P}judges/", judges.judge_list, name="judges"),
    path(f"{_P}judges/new", judges.judge_create, name="judge_create"),
    path(f"{_P}judges/<int:pk>/", judges.judge_edit, name="judge_edit"),
    path(f"{_P}judges/<int:pk>/test", judges.judge_test, name="judge_test"),
    path(f"{_P}scorers/", scorers.scorer_list, name="scorers"),
    path(f"{_P}scorers/new", scorers.scorer_create, name="scorer_create"),
    path(f"{_P}scorers/<int:pk>/", scorers.scorer_edit, name="scorer_edit"),
    path(f"{_P}runs/", runs.run_list, name="runs"),
    path(f"{_P}runs/new", runs.run_create, name="run_create"),
    path(f"{_P}runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path(f"{_P}runs/<int:pk>/progress", runs.run_progress, name="run_progress"),
    path(f"{_P}runs/<int:pk>/summary", runs.run_summary, name="run_summary"),
    path(f"{_P}runs/<int:pk>/cancel", runs.run_cancel, name="run_cancel"),
    path(f"{_P}runs/<int:pk>/rejudge", runs.run_rejudge, name="run_rejudge"),
    path(
        f"{_P}runs/<int:pk>/retry-failed",
        runs.run_retry_failed,
        name="run_retry_failed",
    ),
    path(
        f"{_P}runs/<int:run_id>/bias-audits/",
        audits.bias_audit_list,
        name="bias_audits",
    ),
    path(
        f"{_P}runs/<int:run_id>/bias-audits/start",
        audits.bias_audit_start,
        name="bias_audit_start",
    ),
    path(
        f"{_P}runs/<int:run_id>/bias-audits/<int:pk>/",
        audits.bias_audit_detail,
        name="bias_audit_detail",
    ),
]
