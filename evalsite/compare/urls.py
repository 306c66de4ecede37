from __future__ import annotations

from django.urls import path

from evalsite.compare import views

app_name = "compare"
P = "projects/<int:project_id>/"
urlpatterns = [
    path(f"{P}compare/", views.compare, name="compare"),
    path(f"{P}compare/item/", views.compare_item, name="compare_item"),
    path(f"{P}compare/figures/", views.compare_figures, name="compare_figures"),
]
