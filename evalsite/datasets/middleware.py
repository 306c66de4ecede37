"""Refuse an upload over the dataset size limit before its body is read.

Django parses a multipart body (spooling files over FILE_UPLOAD_MAX_MEMORY_SIZE to a
temporary file) the first time anything touches request.POST or request.FILES, which
the CSRF check does before any view runs. The size check in the upload services would
see a 5 GB file only after it had been written to disk; this middleware looks at the
Content-Length first and answers at once, so the body is never read.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.http import (
    HttpRequest,
    HttpResponseBase,
    HttpResponseRedirect,
    JsonResponse,
)
from django.utils.http import url_has_allowed_host_and_scheme

from evalsite.datasets.services import human_bytes

# Room for the multipart framing and the form's other fields (name, format, mapping).
FORM_OVERHEAD_BYTES = 64 * 1024


class UploadSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method == "POST" and request.content_type == "multipart/form-data":
            refused = self._refuse(request)
            if refused is not None:
                return refused
        return self.get_response(request)

    def _refuse(self, request: HttpRequest) -> HttpResponseBase | None:
        raw_length = request.META.get("CONTENT_LENGTH") or ""
        limit = settings.DATASET_MAX_UPLOAD_BYTES
        try:
            length = int(raw_length)
        except ValueError:
            # Without a length (chunked) the size is unknown until the body is on disk.
            return self._answer(
                request,
                411,
                "Uploads need a Content-Length header (chunked uploads are refused).",
            )
        if length <= limit + FORM_OVERHEAD_BYTES:
            return None
        return self._answer(
            request,
            413,
            f"The upload is {human_bytes(length)}, over the upload limit of "
            f"{human_bytes(limit)}. Split it into smaller files.",
        )

    def _answer(
        self, request: HttpRequest, status: int, message: str
    ) -> HttpResponseBase:
        if request.path.startswith("/api/"):
            return JsonResponse(
                {"detail": message, "errors": [{"field": "file", "message": message}]},
                status=status,
            )
        # A page form: back to where the upload started, with the reason on top.
        messages.error(request, message)
        back = request.META.get("HTTP_REFERER", "")
        if not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            back = "/"
        return HttpResponseRedirect(back)
