from __future__ import annotations

from django.urls import path

from evalsite.webhooks import views

app_name = "webhooks"
_P = "projects/<int:project_id>/webhooks/"
urlpatterns = [
    path(_P, views.webhook_list, name="list"),
    path(f"{_P}<int:pk>/", views.webhook_edit, name="edit"),
    path(f"{_P}<int:pk>/delete", views.webhook_delete, name="delete"),
    path(f"{_P}<int:pk>/deliveries/", views.delivery_list, name="deliveries"),
    path(
        f"{_P}<int:pk>/deliveries/<int:delivery_id>/redeliver",
        views.delivery_redeliver,
        name="redeliver",
    ),
]
