from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from evalsite.api import api


@login_not_required
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("healthz", healthz, name="healthz"),
    path("", include("evalsite.datasets.urls")),
    path("", include("evalsite.evals.urls")),
    path("", include("evalsite.review.urls")),
    path("", include("evalsite.exports.urls")),
    path("", include("evalsite.accounts.urls")),
]
