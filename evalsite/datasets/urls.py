from __future__ import annotations

from django.urls import path

from evalsite.datasets import views

app_name = "datasets"
urlpatterns = [
    path(
        "projects/<int:project_id>/datasets/",
        views.dataset_list_view,
        name="list",
    ),
    path(
        "projects/<int:project_id>/datasets/upload/",
        views.dataset_upload,
        name="upload",
    ),
    path(
        "projects/<int:project_id>/datasets/upload/<str:token>/",
        views.dataset_map,
        name="map",
    ),
    path(
        "projects/<int:project_id>/datasets/<int:dataset_id>/",
        views.dataset_detail,
        name="detail",
    ),
]
