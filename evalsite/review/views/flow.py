"""A queue that flows: the guidelines beside every item, the
reviewer's preferences for keys and advancing, the reference open for the scorers that
compare with it, and a word diff of the output against it.

`flow_context` adds this to the queue card's context; the item page uses
`reference_context` and `result_diff`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from types import EllipsisType
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from evalsite.accounts.models import ReviewerPreferences
from evalsite.evals.models import Result
from evalsite.evals.runs.selectors import result_get_for_user
from evalsite.lib.worddiff import WORD_DIFF_MAX_WORDS, word_diff_cached
from evalsite.review.guidelines.selectors import guideline_current, guideline_html
from evalsite.review.models import Guideline, ReviewQueue
from evalsite.review.queues.waiting import queue_next_waiting, queue_open_flag
from evalsite.review.selectors.preferences import reviewer_preferences


def queue_position(
    request: HttpRequest, *, size: int, default: Callable[[], int | None]
) -> int | None:
    """The position a queue page shows: ?pos= when it is one of the queue's (1 to
    size), None when it is not (the page answers position_refused); without ?pos=,
    `default()` (the reviewer's next item), else 1."""
    raw = request.GET.get("pos")
    if raw is None:
        return default() or 1
    if raw.isdigit() and 1 <= int(raw) <= max(size, 1):
        return int(raw)
    return None


def position_refused(size: int) -> HttpResponse:
    return HttpResponse(
        f"pos must be a number between 1 and {size}.",
        status=400,
        content_type="text/plain",
    )


# Scorer kinds whose score compares the output with the item's reference (the text
# kinds fall back to the input without one): their reviewers see it open.
REFERENCE_KINDS = frozenset(
    {
        "factuality",
        "context_precision",
        "content_similarity",
        "textual_difference",
        "keyword_coverage",
        "completeness",
    }
)


class QueueFlow:
    """What the queue page shows around the card. Read lazily: the card's htmx
    swaps never touch the guidelines or the preferences, which live outside it."""

    def __init__(self, queue: ReviewQueue, user: User | AnonymousUser) -> None:
        self.queue = queue
        self.user = user
        self.guidelines_url = reverse(
            "review:queue_guidelines", args=[queue.project_id, queue.pk]
        )
        self.project_guidelines_url = reverse(
            "review:project_guidelines", args=[queue.project_id]
        )

    @cached_property
    def guideline(self) -> Guideline | None:
        """The guidelines in force for this queue (its own, else the project's)."""
        return guideline_current(
            project_id=self.queue.project_id, queue_id=self.queue.pk
        )

    @cached_property
    def guideline_html(self) -> SafeString | str:
        return guideline_html(self.guideline) if self.guideline else ""

    @cached_property
    def project_guideline(self) -> Guideline | None:
        """The project's guidelines too, for the ? panel, when the queue has its own."""
        if self.guideline is None or self.guideline.queue_id is None:
            return None
        return guideline_current(project_id=self.queue.project_id)

    @cached_property
    def project_guideline_html(self) -> SafeString | str:
        return guideline_html(self.project_guideline) if self.project_guideline else ""

    @cached_property
    def can_edit_guidelines(self) -> bool:
        return bool(self.queue.project.membership.can_adjudicate)

    @cached_property
    def preferences(self) -> ReviewerPreferences:
        return reviewer_preferences(self.user)


def reference_context(
    result: Result | None, *, kinds: Iterable[str] = ()
) -> dict[str, Any]:
    """The reference's state for a result's item: open when its scorer (or any of
    `kinds`, for a page of several scorers) compares with it, and where its word
    diff loads from."""
    if result is None or not result.item.reference:
        return {"reference_open": False, "diff_url": None}
    kinds = {result.run_scorer.kind, *kinds}
    return {
        "reference_open": bool(kinds & REFERENCE_KINDS),
        "diff_url": reverse(
            "review:result_diff", args=[result.run.project_id, result.pk]
        ),
    }


def flow_context(
    request: HttpRequest, queue: ReviewQueue, result: Result | None
) -> dict[str, Any]:
    """The queue card's share of the flow (see the module docstring)."""
    return {"flow": QueueFlow(queue, request.user), **reference_context(result)}


def skip_flag_context(
    request: HttpRequest,
    queue: ReviewQueue,
    position: int,
    *,
    url: Callable[[ReviewQueue, int | None], str],
    flag_error: str = "",
    following: int | None | EllipsisType = ...,
) -> dict[str, Any]:
    """Skip and Flag on a card of any queue kind: Skip leads to the next item
    waiting for the reviewer (the skipped one keeps waiting and comes round again);
    Flag posts a reason. `url(queue, position)` is the card's own URL. `following`:
    where Skip leads when the caller read it already (`waiting_for(around=...)`)."""
    user = request.user
    if following is ...:
        following = (
            queue_next_waiting(queue=queue, user=user, after=position)
            if isinstance(user, User)
            else None
        )
    return {
        "skip_url": url(queue, following) if following else None,
        "flag_url": reverse(
            "review:queue_flag", args=[queue.project_id, queue.pk, position]
        ),
        "open_flag": queue_open_flag(queue=queue, position=position),
        "flag_error": flag_error,
        "flag_reason": request.POST.get("reason", "") if flag_error else "",
    }


@require_GET
def result_diff(request: HttpRequest, project_id: int, result_id: int) -> HttpResponse:
    """The word diff of a result's output against its reference (a fragment that the
    queue card and the item page load when its panel opens)."""
    result = result_get_for_user(user=request.user, pk=result_id, project_id=project_id)
    item = result.item
    diff = word_diff_cached(item.reference or "", item.output or "")
    return render(
        request,
        "review/_word_diff.html",
        {
            "diff": diff,
            "limit": WORD_DIFF_MAX_WORDS,
            "has_reference": bool(item.reference),
        },
    )
