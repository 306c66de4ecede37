from __future__ import annotations

import sys

from django.contrib.auth.decorators import login_not_required
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from django.views.defaults import server_error as django_server_error

from evalsite.core.health import health_check
from evalsite.core.middleware import (
    close_broken_connections,
    database_unavailable_response,
)


@login_not_required
@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Public probe for load balancers and compose: 200 when the database, the broker
    and the cache all answer, else 503 naming the ones that did not."""
    checks = health_check()
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "error", "checks": checks},
        status=200 if healthy else 503,
    )


def server_error(request: HttpRequest) -> HttpResponseBase:
    """handler500: a lost database connection outside a view (a middleware loading the
    session or the user) answers 503 with Retry-After, like one inside a view
    (DatabaseUnavailableMiddleware); anything else is Django's 500 page."""
    exc = sys.exc_info()[1]
    if isinstance(exc, (OperationalError, InterfaceError)):
        close_broken_connections()
        return database_unavailable_response(request)
    return django_server_error(request)
