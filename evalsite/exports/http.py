"""The streamed HTTP response shared by the export pages and the export API."""

from __future__ import annotations

from collections.abc import Iterator

from django.http import StreamingHttpResponse

from evalsite.exports.services import MEDIA_TYPES, Format


def export_response(
    stream: Iterator[bytes], *, fmt: Format, filename: str
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type=MEDIA_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # Exports hold reviewed data: never cache them in shared caches.
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
