"""Reads of comments on results."""

from __future__ import annotations

from django.db.models import QuerySet

from evalsite.evals.models import Comment, Result


def comment_list(*, result: Result) -> QuerySet[Comment]:
    return Comment.objects.filter(result=result).select_related("user")
