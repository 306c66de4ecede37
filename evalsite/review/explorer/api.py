"""Review API: a run's results, filtered and sorted like the explorer page; bulk
actions on them; each user's saved explorer filters."""

from __future__ import annotations

from typing import Any

from ninja import Query, Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.core.schemas import ErrorOut
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.explorer.bulk import (
    BulkOutcome,
    assignee_get,
    results_accept,
    results_assign,
    results_enqueue,
)
from evalsite.review.explorer.keyset import KeysetPage, cursor_decode
from evalsite.review.explorer.saved_filters import (
    saved_filter_create,
    saved_filter_delete,
)
from evalsite.review.explorer.saved_filters_selectors import (
    saved_filter_get_for_user,
    saved_filter_list,
)
from evalsite.review.explorer.schemas import (
    BulkAssignIn,
    BulkOut,
    BulkQueueIn,
    ResultListIn,
    ResultPageOut,
    SavedFilterIn,
    SavedFilterOut,
    SelectionIn,
)
from evalsite.review.explorer.selectors import (
    Selection,
    results_filter,
    results_page_at,
)
from evalsite.review.models import SavedFilter
from evalsite.review.queues.selectors import queue_get_for_user
from evalsite.review.selectors.blind import blind_run_split
from evalsite.review.tasks import bulk_start_in_background

router = Router(tags=["review"])

_ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


@router.get("/runs/{run_id}/results", response=ResultPageOut)
def result_list(
    request: AuthenticatedHttpRequest,
    run_id: int,
    filters: ResultListIn = Query(...),  # type: ignore[type-arg]  # noqa: B008 - ninja types Query as an Annotated alias
) -> dict[str, Any]:
    """Filtered results, `{"items", "count"}` like every other list, plus `next` and
    `previous` cursors: pass one as `after` / `before` to page by keyset, which reaches
    every result of any run (limit/offset still works up to its cap). Paginated by
    hand: ninja's @paginate wrapper breaks postponed annotations of a Query schema."""
    run = run_get_for_user(user=request.user, pk=run_id)
    qs = results_filter(run=run, query=filters, user=request.user)
    # Results blind to the caller are left out before filters and sorts apply;
    # how many is counted over the whole run, not the filter (selectors.blind).
    qs, blind_hidden = blind_run_split(qs, user=request.user, run=run)
    paging: dict[str, Any] = {"offset": filters.offset}
    if filters.after:
        paging = {"after_cursor": cursor_decode(filters.after, sort=filters.sort)}
    elif filters.before:
        cursor = cursor_decode(filters.before, sort=filters.sort, field="before")
        paging = {"before_cursor": cursor}
    page, rows = results_page_at(
        qs, sort=filters.sort, limit=filters.limit, paging=paging
    )
    return _result_page(qs, page, rows, blind_hidden)


def _result_page(
    qs: Any, page: KeysetPage, rows: list[Any], blind_hidden: int
) -> dict[str, Any]:
    return {
        "count": qs.count(),
        "items": rows,
        "next": page.next_cursor,
        "previous": page.previous_cursor,
        "blind_hidden": blind_hidden,
    }


# ------------------------------------------------------------------ bulk actions


def _selection(payload: SelectionIn) -> Selection:
    if payload.ids is not None:
        return Selection(ids=tuple(payload.ids))
    return Selection(query=payload.filters)


@router.post("/runs/{run_id}/results/accept", response={200: BulkOut, **_ERRORS})
def results_accept_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: SelectionIn
) -> BulkOutcome:
    """Accept the current verdict of the results named by `ids`, or of every result
    matching `filters`; errored, pending and already reviewed ones are skipped."""
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    selection = _selection(payload)
    queued = bulk_start_in_background(
        user=request.user, run=run, action="accept", selection=selection
    )
    if queued:
        return BulkOutcome(action="accept", background=queued)
    return results_accept(run=run, user=request.user, selection=selection)


@router.post("/runs/{run_id}/results/assign", response={200: BulkOut, **_ERRORS})
def results_assign_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: BulkAssignIn
) -> BulkOutcome:
    """Assign the selected results to a reviewer (`assignee: null` unassigns)."""
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    assignee = (
        assignee_get(run=run, username=payload.assignee) if payload.assignee else None
    )
    selection = _selection(payload)
    queued = bulk_start_in_background(
        user=request.user,
        run=run,
        action="assign",
        selection=selection,
        assignee=assignee,
    )
    if queued:
        return BulkOutcome(
            action="assign" if assignee else "unassign", background=queued
        )
    outcome = results_assign(
        run=run, user=request.user, selection=selection, assignee=assignee
    )
    return outcome


@router.post("/runs/{run_id}/results/queue", response={200: BulkOut, **_ERRORS})
def results_enqueue_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: BulkQueueIn
) -> BulkOutcome:
    """Put the selected results in a new queue, or append them to `queue_id` (a queue
    of this run that is not a stratified sample)."""
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    queue = None
    if payload.queue_id is not None:
        queue = queue_get_for_user(
            user=request.user,
            pk=payload.queue_id,
            write=True,
            project_id=run.project_id,
        )
    outcome = results_enqueue(
        run=run,
        user=request.user,
        selection=_selection(payload),
        queue=queue,
        name=payload.name,
        blind=payload.blind,
    )
    return outcome


# ------------------------------------------------------------------ saved filters


@router.get("/projects/{project_id}/saved-filters", response=list[SavedFilterOut])
@paginate(LimitOffsetPagination)
def saved_filter_list_api(
    request: AuthenticatedHttpRequest, project_id: int
) -> list[SavedFilter]:
    """My saved explorer filters in this project (never anyone else's), by name."""
    project = project_get_for_user(user=request.user, pk=project_id)
    return list(saved_filter_list(project_id=project.pk, user=request.user))


@router.post(
    "/projects/{project_id}/saved-filters",
    response={201: SavedFilterOut, **_ERRORS},
)
def saved_filter_create_api(
    request: AuthenticatedHttpRequest, project_id: int, payload: SavedFilterIn
) -> Status[SavedFilter]:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    saved = saved_filter_create(
        project=project, user=request.user, name=payload.name, query=payload.filters
    )
    return Status(201, saved)


@router.get(
    "/saved-filters/{saved_filter_id}", response={200: SavedFilterOut, **_ERRORS}
)
def saved_filter_detail_api(
    request: AuthenticatedHttpRequest, saved_filter_id: int
) -> SavedFilter:
    return saved_filter_get_for_user(user=request.user, pk=saved_filter_id)


@router.delete("/saved-filters/{saved_filter_id}", response={204: None, **_ERRORS})
def saved_filter_delete_api(
    request: AuthenticatedHttpRequest, saved_filter_id: int
) -> Status[None]:
    saved = saved_filter_get_for_user(user=request.user, pk=saved_filter_id, write=True)
    saved_filter_delete(saved=saved)
    return Status(204, None)
