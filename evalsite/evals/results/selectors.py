"""Reads of overrides and comments."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404

from evalsite.evals.models import Comment, Override, Result
from evalsite.evals.runs.selectors import result_get_for_user


def override_get_for_user(
    *,
    user: User | AnonymousUser,
    pk: int,
    write: bool = False,
    manage: bool = False,
    project_id: int | None = None,
) -> Override:
    """An override of a result the user may see (404 / 403 like `result_get_for_user`).

    The result, checked and loaded by `result_get_for_user`, is attached as
    `override.result`.
    """
    override = (
        Override.objects.select_related("user", "reverted_by").filter(pk=pk).first()
    )
    if override is None:
        raise Http404("No such override.")
    override.result = result_get_for_user(
        user=user,
        pk=override.result_id,
        write=write,
        manage=manage,
        project_id=project_id,
    )
    return override


def comment_list(*, result: Result) -> QuerySet[Comment]:
    return Comment.objects.filter(result=result).select_related("user")
