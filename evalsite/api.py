"""The one NinjaAPI: bearer-token (or session) auth, one error body shape, app routers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    SuspiciousOperation,
    TooManyFieldsSent,
)
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer, django_auth

from evalsite.accounts.services import api_token_authenticate
from evalsite.core.exceptions import ApplicationError


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any:
        api_token = api_token_authenticate(token)
        if api_token is None:
            return None
        request.user = api_token.user
        return api_token.user


api = NinjaAPI(
    title="evalsite API",
    version="1",
    description="Upload datasets, configure LLM-judge scorers, run them, review and export.",
    auth=[BearerToken(), django_auth],
    urls_namespace="api",
)


def _error(
    request: HttpRequest,
    status: int,
    detail: str,
    errors: list[dict[str, str]] | None = None,
) -> HttpResponse:
    return api.create_response(
        request, {"detail": detail, "errors": errors or []}, status=status
    )


@api.exception_handler(ApplicationError)
def _application_error(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
    errors = [
        {"field": field, "message": msg} for field, msg in exc.field_errors.items()
    ]
    return _error(request, exc.status_code, exc.message, errors)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = []
    for err in exc.errors:
        loc = [
            str(p)
            for p in err.get("loc", ())
            if p not in ("body", "query", "path", "form", "payload")
        ]
        errors.append(
            {"field": ".".join(loc), "message": str(err.get("msg", "invalid"))}
        )
    first = errors[0] if errors else {"field": "", "message": "invalid"}
    return _error(
        request, 422, f"Invalid input: {first['field']}: {first['message']}", errors
    )


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, 404, "Not found.")


@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return _error(request, 403, str(exc) or "Permission denied.")


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _error(
        request, 401, "Authentication required: send 'Authorization: Bearer <token>'."
    )


@api.exception_handler(SuspiciousOperation)
def _suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    # Django's own 400s for a request it will not read whole (a query or form with more
    # than DATA_UPLOAD_MAX_NUMBER_FIELDS fields, too many files, a body over the size
    # limit); ninja would otherwise answer them with a 500.
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        detail = f"Too many query or form fields: at most {limit:,} are read."
    else:
        detail = f"Bad request: {exc}"
    return _error(request, 400, detail, [{"field": "", "message": detail}])


@api.exception_handler(MultiPartParserError)
def _bad_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    # A multipart body Django cannot parse (no boundary, a broken part).
    return _error(
        request,
        400,
        f"The multipart body cannot be read: {exc}",
        [{"field": "body", "message": str(exc)}],
    )


@api.exception_handler(BadRequest)
def _bad_request(request: HttpRequest, exc: BadRequest) -> HttpResponse:
    return _error(request, 400, str(exc) or "Bad request.")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def _database_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Not ninja's: with DEBUG on it answers any error with a 500 traceback. The
    # DatabaseUnavailableMiddleware answers a lost connection (503, or a retried GET).
    raise exc


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return _error(request, exc.status_code, str(exc))


def _mount_routers() -> None:
    # One router per app, each mounted by import.
    from evalsite.accounts.api import router as accounts_router
    from evalsite.compare.api import router as compare_router
    from evalsite.datasets.api import router as datasets_router
    from evalsite.evals.api import router as evals_router
    from evalsite.exports.api import router as exports_router
    from evalsite.imports.api import router as imports_router
    from evalsite.review.api import router as review_router
    from evalsite.webhooks.api import router as webhooks_router

    for router in (
        accounts_router,
        datasets_router,
        evals_router,
        review_router,
        compare_router,
        exports_router,
        imports_router,
        webhooks_router,
    ):
        api.add_router("", router)


_mount_routers()
