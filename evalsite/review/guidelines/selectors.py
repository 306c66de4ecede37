"""Reads for review guidelines: the version in force, the history, the rendered text."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.utils.safestring import SafeString

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import project_get_for_user
from evalsite.lib.markdown import markdown_to_html
from evalsite.review.models import Guideline, ReviewQueue
from evalsite.review.queues.selectors import queue_get_for_user

HISTORY_LIMIT = 50
# A version's text never changes, so its HTML is cached by id with no invalidation;
# the renderer's version is in the key for when the sanitiser's rules change.
_HTML_KEY = "review:guideline-html:v1:{pk}"
_HTML_TTL = 24 * 3600


@dataclass(frozen=True)
class GuidelineScope:
    """Whose guidelines a page or endpoint is about, and whether the user may edit them."""

    project: Project
    queue: ReviewQueue | None
    can_edit: bool


def guideline_scope_for_user(
    *,
    user: User,
    project_id: int,
    queue_id: int | None = None,
    edit: bool = False,
) -> GuidelineScope:
    """The project (and queue) whose guidelines `user` reads or, with edit=True, saves.

    Every member reads them; owners and adjudicators edit them. 404 for outsiders and
    for a queue of another project, 403 for a member who may not edit.
    """
    queue: ReviewQueue | None = None
    if queue_id is not None:
        queue = queue_get_for_user(user=user, pk=queue_id, project_id=project_id)
        project = queue.project
    else:
        project = project_get_for_user(user=user, pk=project_id)
    can_edit = bool(project.membership.can_adjudicate)
    if edit and not can_edit:
        raise PermissionDenied("Only owners and adjudicators can edit the guidelines.")
    return GuidelineScope(project=project, queue=queue, can_edit=can_edit)


def _latest(*, project_id: int, queue_id: int | None) -> Guideline | None:
    query = Guideline.objects.filter(project_id=project_id).select_related("created_by")
    if queue_id is None:
        query = query.filter(queue__isnull=True)
    else:
        query = query.filter(queue_id=queue_id)
    return query.order_by("-version").first()


def guideline_current(
    *, project_id: int, queue_id: int | None = None
) -> Guideline | None:
    """The guidelines in force: the queue's latest version, else the project's latest.

    A latest version that is empty (someone cleared the text) counts as none, so
    clearing a queue's guidelines brings the project's back.
    """
    if queue_id is not None:
        own = _latest(project_id=project_id, queue_id=queue_id)
        if own is not None and own.body.strip():
            return own
    project_wide = _latest(project_id=project_id, queue_id=None)
    if project_wide is not None and project_wide.body.strip():
        return project_wide
    return None


def guideline_latest(
    *, project_id: int, queue_id: int | None = None
) -> Guideline | None:
    """The latest version of exactly this scope (the queue's own, or the project's),
    empty or not: what its editor starts from."""
    return _latest(project_id=project_id, queue_id=queue_id)


def guideline_history(
    *, project_id: int, queue_id: int | None = None, limit: int = HISTORY_LIMIT
) -> list[Guideline]:
    """The versions of one scope, newest first (at most `limit`)."""
    query = Guideline.objects.filter(project_id=project_id).select_related("created_by")
    if queue_id is None:
        query = query.filter(queue__isnull=True)
    else:
        query = query.filter(queue_id=queue_id)
    return list(query.order_by("-version")[:limit])


def guideline_html(guideline: Guideline) -> SafeString:
    """A version's text as sanitised HTML (evalsite.lib.markdown), cached by id."""
    key = _HTML_KEY.format(pk=guideline.pk)
    html: str | None = cache.get(key)
    if html is None:
        html = str(markdown_to_html(guideline.body))
        cache.set(key, html, _HTML_TTL)
    return SafeString(html)  # what markdown_to_html returned: sanitised
