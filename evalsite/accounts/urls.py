from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from evalsite.accounts import views

app_name = "accounts"
urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.dashboard, name="dashboard"),
    path("projects/new/", views.project_create, name="project_create"),
    path("projects/<int:project_id>/", views.project_detail, name="project"),
    path(
        "projects/<int:project_id>/settings/", views.project_settings, name="settings"
    ),
    path("projects/<int:project_id>/audit/", views.audit_log, name="audit"),
    path("projects/<int:project_id>/members/", views.member_set, name="member_set"),
    path(
        "projects/<int:project_id>/members/new/",
        views.member_create,
        name="member_create",
    ),
    path(
        "projects/<int:project_id>/members/<int:membership_id>/role/",
        views.member_role,
        name="member_role",
    ),
    path(
        "projects/<int:project_id>/invitations/",
        views.invitation_create,
        name="invitation_create",
    ),
    path(
        "projects/<int:project_id>/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation_revoke",
    ),
    path("invite/<str:token>/", views.invite, name="invite"),
    path(
        "invitations/<int:invitation_id>/respond/",
        views.invitation_respond,
        name="invitation_respond",
    ),
    path(
        "projects/<int:project_id>/members/<int:membership_id>/remove/",
        views.member_remove,
        name="member_remove",
    ),
    path("account/tokens/", views.api_tokens, name="tokens"),
    path(
        "account/tokens/<int:token_id>/revoke/",
        views.api_token_revoke,
        name="token_revoke",
    ),
]
