from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import (
    LoginRequiredMiddleware as DjangoLoginRequired,
)
from django.db import InterfaceError, OperationalError, connections
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
)
from django.template.loader import render_to_string


class ServerTimingMiddleware:
    """`Server-Timing: app;dur=<ms>` on every response: the time the app spent on the
    request (every other middleware included), shown by browsers' developer tools and
    read by `make bench`. A streamed response's body is not included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed_ms = (time.perf_counter() - started) * 1000
        response["Server-Timing"] = f"app;dur={elapsed_ms:.1f}"
        return response


class ContentSecurityPolicyMiddleware:
    """`Content-Security-Policy: <CONTENT_SECURITY_POLICY>` on every response.

    A response that sets its own policy keeps it. In DEBUG only, Django's technical
    404 and 500 pages (inline scripts and styles throughout) are sent without one, so
    they keep working; in production those statuses are our own templates.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if not policy or (settings.DEBUG and response.status_code in (404, 500)):
            return response
        response.setdefault("Content-Security-Policy", policy)
        return response


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Every page needs a login; the REST API authenticates itself (bearer tokens)."""

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        if request.path.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class ApiErrorShapeMiddleware:
    """Give /api/ the one error body shape even where Django answers before ninja does.

    Unknown API paths (Django's 404) and wrong methods (ninja's plain 405) become
    {"detail", "errors"} JSON; an id too large for the database is a 404, not a 500.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not request.path.startswith("/api/") or response.status_code not in (
            404,
            405,
        ):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        detail = "Not found." if response.status_code == 404 else "Method not allowed."
        shaped = JsonResponse(
            {"detail": detail, "errors": []}, status=response.status_code
        )
        if response.has_header("Allow"):
            shaped["Allow"] = response["Allow"]
        return shaped

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        # SQLite raises OverflowError for ids beyond 64 bits; Postgres simply finds nothing.
        if isinstance(exception, OverflowError):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": "Not found.", "errors": []}, status=404)
            raise Http404("No such object.") from exception
        return None


logger = logging.getLogger(__name__)

DATABASE_RETRY_AFTER_SECONDS = 5
_DATABASE_UNAVAILABLE = (
    "The database connection was lost while answering this request. Nothing was "
    "retried for you if it could have changed something; try again in a few seconds."
)
_RETRY_METHODS = ("GET", "HEAD")


class DatabaseUnavailableMiddleware:
    """A lost database connection answers 503 with Retry-After, never a 500.

    A view that raises OperationalError or InterfaceError (the backend was terminated,
    the server restarted, a connection could not be made) gets its connections closed,
    so the next request opens fresh ones. A GET or HEAD is then run once more, since it
    changes nothing; any other method is not (it may have written before the error),
    and answers 503 with a message and Retry-After. /api/ answers in the API's error
    shape. Last in MIDDLEWARE, so its process_exception runs first.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> None:
        request._database_retry_view = (view_func, view_args, view_kwargs)  # type: ignore[attr-defined]

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        # The class only: a driver's message can carry the connection's URL.
        logger.warning(
            "Database error on %s %s: %s",
            request.method,
            request.path,
            type(exception).__name__,
        )
        close_broken_connections()
        view = getattr(request, "_database_retry_view", None)
        if request.method in _RETRY_METHODS and view is not None:
            view_func, view_args, view_kwargs = view
            try:
                response: HttpResponseBase = view_func(
                    request, *view_args, **view_kwargs
                )
                if hasattr(response, "render") and callable(response.render):
                    response = response.render()
                return response
            except (OperationalError, InterfaceError) as again:
                logger.warning(
                    "Database error again on retry: %s", type(again).__name__
                )
                close_broken_connections()
        return database_unavailable_response(request)


def close_broken_connections() -> None:
    for conn in connections.all(initialized_only=True):
        if conn.in_atomic_block:
            continue  # the view's own atomic block has not unwound; leave it to Django
        conn.close()


def database_unavailable_response(request: HttpRequest) -> HttpResponseBase:
    response: HttpResponseBase
    if request.path.startswith("/api/"):
        response = JsonResponse(
            {
                "detail": _DATABASE_UNAVAILABLE,
                "errors": [{"field": "", "message": "database unavailable"}],
            },
            status=503,
        )
    else:
        response = HttpResponse(
            render_to_string("503.html", {"detail": _DATABASE_UNAVAILABLE}),
            status=503,
        )
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response
