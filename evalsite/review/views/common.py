"""Small helpers shared by the review views."""

from __future__ import annotations

from django.urls import reverse

from evalsite.accounts.models import Project


def user_can_write(project: Project) -> bool:
    return bool(project.membership.can_review)


def item_url(project_id: int, result_id: int) -> str:
    return reverse("review:item", args=[project_id, result_id])
