from __future__ import annotations

from django.urls import path

from evalsite.review import views_item as views

# Item view, overrides, what-if rescore, compare, run aggregates (helper D1).
P = "projects/<int:project_id>/"
urlpatterns: list = [
    path(f"{P}results/<int:result_id>/", views.item, name="item"),
    path(
        f"{P}results/<int:result_id>/overrides/",
        views.override_create,
        name="override_create",
    ),
    path(f"{P}results/<int:result_id>/accept/", views.accept, name="accept"),
    path(
        f"{P}results/<int:result_id>/calls/<int:call_id>/",
        views.judge_call,
        name="judge_call",
    ),
    path(
        f"{P}overrides/<int:override_id>/undo/",
        views.override_revert,
        name="override_revert",
    ),
    path(f"{P}runs/<int:run_id>/items/<int:item_id>/", views.run_item, name="run_item"),
    path(f"{P}runs/<int:run_id>/rescore/", views.rescore, name="rescore"),
    path(f"{P}compare/", views.compare, name="compare"),
]
