from __future__ import annotations

from typing import Any

from django.contrib.auth.middleware import (
    LoginRequiredMiddleware as DjangoLoginRequired,
)
from django.http import HttpRequest, HttpResponseBase


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Every page needs a login; the REST API authenticates itself (bearer tokens)."""

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        if request.path.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
