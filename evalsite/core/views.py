from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evalsite.accounts.selectors import project_get_for_user


def placeholder(request: HttpRequest, project_id: int, title: str = "") -> HttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    return render(
        request, "core/placeholder.html", {"project": project, "title": title}
    )
