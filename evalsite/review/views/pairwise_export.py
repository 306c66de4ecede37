"""The download of a pairwise queue's answers (CSV, `?excel=1` for Excel's UTF-8
CSV, or JSONL), linked from the queue page. Any member may download, viewers too, as
with run exports; outsiders and another project's ids get 404. The rows and their
blindness are `selectors.pairwise_export`'s."""

from __future__ import annotations

from collections.abc import Iterator

from django.http import HttpResponseBase, StreamingHttpResponse
from django.views.decorators.http import require_GET

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.review.selectors.pairwise import pairwise_get_for_user
from evalsite.review.selectors.pairwise_export import (
    MEDIA_TYPES,
    PairwiseFormat,
    pairwise_export_filename,
    pairwise_export_stream,
)

_TRUE = {"1", "true", "on", "yes"}


def export_response(
    stream: Iterator[bytes], *, fmt: PairwiseFormat, filename: str
) -> StreamingHttpResponse:
    """The streamed attachment, with the run exports' headers (the API uses it too)."""
    response = StreamingHttpResponse(stream, content_type=MEDIA_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # The answers are reviewed data: never cache them in shared caches.
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _export(
    request: AuthenticatedHttpRequest,
    project_id: int,
    pairwise_id: int,
    fmt: PairwiseFormat,
) -> HttpResponseBase:
    queue = pairwise_get_for_user(
        user=request.user, pk=pairwise_id, project_id=project_id
    )
    excel = fmt == "csv" and request.GET.get("excel", "").lower() in _TRUE
    stream = pairwise_export_stream(
        queue=queue, user=request.user, fmt=fmt, excel=excel
    )
    filename = pairwise_export_filename(queue=queue, fmt=fmt, excel=excel)
    return export_response(stream, fmt=fmt, filename=filename)


@require_GET
def pairwise_export_csv(
    request: AuthenticatedHttpRequest, project_id: int, pairwise_id: int
) -> HttpResponseBase:
    return _export(request, project_id, pairwise_id, "csv")


@require_GET
def pairwise_export_jsonl(
    request: AuthenticatedHttpRequest, project_id: int, pairwise_id: int
) -> HttpResponseBase:
    return _export(request, project_id, pairwise_id, "jsonl")
