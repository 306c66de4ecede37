"""Typed requests for views and API operations (django-htmx's HtmxHttpRequest pattern)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's HtmxMiddleware."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """A request with a signed-in user: every page but the ones marked
    login_not_required (LoginRequiredMiddleware), and every API operation (the
    NinjaAPI's auth)."""

    user: User
