from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path
from mozilla_django_oidc.views import OIDCLogoutView

from evalsite.sso import views

# mozilla-django-oidc looks these names up (not namespaced).
urlpatterns = [
    path(
        "oidc/authenticate/",
        login_not_required(views.LoginStartView.as_view()),
        name="oidc_authentication_init",
    ),
    path(
        "oidc/callback/",
        login_not_required(views.LoginCallbackView.as_view()),
        name="oidc_authentication_callback",
    ),
    path("oidc/logout/", OIDCLogoutView.as_view(), name="oidc_logout"),
]
