from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from evalsite.review.queues.waiting import Waiting, waiting_for


def waiting(request: HttpRequest) -> dict[str, Any]:
    """`nav_waiting`: what waits for the user in the project of the page (the
    navigation's badge). Lazy, so pages and fragments that never show it run no
    query, and kept on the request, so a page that renders several templates reads
    it once."""
    user = getattr(request, "user", None)
    match = getattr(request, "resolver_match", None)
    project_id = match.kwargs.get("project_id") if match else None
    if user is None or not user.is_authenticated or not isinstance(project_id, int):
        return {}

    def load() -> Waiting:
        cached = getattr(request, "_waiting_cache", None)
        if cached is None:
            cached = waiting_for(project_id=project_id, user=user)
            request._waiting_cache = cached  # type: ignore[attr-defined]  # per request
        return cached

    return {"nav_waiting": SimpleLazyObject(load)}
