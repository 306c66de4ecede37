from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from evalsite.accounts.selectors import project_list_for_user


def projects(request: HttpRequest) -> dict[str, Any]:
    """The user's projects for the project switcher in the navigation bar."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    match = getattr(request, "resolver_match", None)
    current = match.kwargs.get("project_id") if match else None
    return {
        # Lazy, so that partials which never show the switcher (htmx swaps) do not
        # even build the query; read once per render when a page shows it.
        "nav_projects": SimpleLazyObject(
            lambda: list(project_list_for_user(user=user).only("id", "name"))
        ),
        "nav_project_id": current,
    }
