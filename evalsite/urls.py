from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from evalsite.api import api
from evalsite.core.views import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("healthz", healthz, name="healthz"),
    path("", include("evalsite.datasets.urls")),
    path("", include("evalsite.evals.urls")),
    path("", include("evalsite.review.urls")),
    path("", include("evalsite.compare.urls")),
    path("", include("evalsite.imports.urls")),
    path("", include("evalsite.exports.urls")),
    path("", include("evalsite.accounts.urls")),
    path("", include("evalsite.sso.urls")),
    path("", include("evalsite.webhooks.urls")),
]

# A lost database connection is a 503 (evalsite.core.views.server_error).
handler500 = "evalsite.core.views.server_error"
