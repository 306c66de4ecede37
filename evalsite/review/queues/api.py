"""Review API: review queues."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from ninja import Router, Status
from ninja.errors import HttpError
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.core.schemas import ErrorOut
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.models import PairwiseItem, QueueEntry, QueueFlag, ReviewQueue
from evalsite.review.queues.schemas import (
    FlagIn,
    FlagOut,
    FlagResolveIn,
    QueueIn,
    QueueOut,
    SkipOut,
    WaitingOut,
)
from evalsite.review.queues.selectors import (
    FLAG_STATES,
    flag_get_for_user,
    flag_list_for_project,
    queue_get_for_user,
)
from evalsite.review.queues.services import (
    queue_create,
    queue_flag_resolve,
    queue_item_flag,
)
from evalsite.review.queues.waiting import queue_next_waiting, waiting_for

router = Router(tags=["review"])


@router.post("/runs/{run_id}/queues", response={201: QueueOut})
def queue_create_api(
    request: AuthenticatedHttpRequest, run_id: int, payload: QueueIn
) -> Status[ReviewQueue]:
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    source = ReviewQueue.Source(payload.source)
    if payload.stratified is not None:
        source = ReviewQueue.Source.STRATIFIED
    queue = queue_create(
        run=run,
        user=request.user,
        query=payload.filters,
        source=source,
        name=payload.name,
        blind=payload.blind,
        pass_share=payload.stratified.pass_share if payload.stratified else None,
        seed=payload.stratified.seed if payload.stratified else 0,
        assign_round_robin=payload.assign_round_robin,
        overlap=payload.overlap,
        final_rule=payload.final_rule,
    )
    return Status(201, queue)


def review_queue_get(
    *, request: AuthenticatedHttpRequest, queue_id: int, write: bool = False
) -> ReviewQueue:
    """queue_get_for_user for the endpoints of review queues. A pairwise queue is
    not one: its id answers 404 with a pointer to GET /api/pairwise/{id} (its pairs,
    answers and figures), as /api/pairwise/{id} answers 404 for a review queue."""
    queue = queue_get_for_user(user=request.user, pk=queue_id, write=write)
    # Checked after membership, so an outsider learns nothing about the queue's kind.
    if queue.kind == ReviewQueue.Kind.PAIRWISE:
        raise HttpError(
            404,
            f"Queue {queue.pk} is a pairwise queue: read it at "
            f"/api/pairwise/{queue.pk}.",
        )
    return queue


@router.get("/queues/{queue_id}", response={200: QueueOut, 404: ErrorOut})
def queue_detail_api(request: AuthenticatedHttpRequest, queue_id: int) -> ReviewQueue:
    """A review queue with its progress (404 for a pairwise queue's id)."""
    return review_queue_get(request=request, queue_id=queue_id)


@router.get("/projects/{project_id}/waiting", response=WaitingOut)
def waiting_api(request: AuthenticatedHttpRequest, project_id: int) -> dict[str, Any]:
    """What waits for you in the project: per queue, the items you can answer and
    have not (team queues included), and your assigned results in no queue."""
    project = project_get_for_user(user=request.user, pk=project_id)
    waiting = waiting_for(project_id=project.pk, user=request.user)
    queues = ReviewQueue.objects.filter(pk__in=list(waiting.by_queue)).order_by(
        "-created_at", "-id"
    )
    return {
        "total": waiting.total,
        "queued": waiting.queued,
        "assigned": waiting.assigned,
        "queues": [
            {
                "queue_id": q.pk,
                "name": q.name,
                "kind": q.kind,
                "waiting": waiting.by_queue[q.pk],
                "url": _item_url(q, None),
            }
            for q in queues
        ],
    }


def _item_url(queue: ReviewQueue, position: int | None) -> str:
    name = "review:pairwise" if queue.is_pairwise else "review:queue"
    url = reverse(name, args=[queue.project_id, queue.pk])
    return f"{url}?pos={position}" if position else url


def _queue_item(
    request: AuthenticatedHttpRequest, queue_id: int, position: int, *, write: bool
) -> ReviewQueue:
    """A queue of any kind (review or pairwise) with an item at `position`."""
    queue = queue_get_for_user(user=request.user, pk=queue_id, write=write)
    items = PairwiseItem.objects if queue.is_pairwise else QueueEntry.objects
    if not items.filter(queue=queue, position=position).exists():
        raise HttpError(404, f"Queue {queue.pk} has no item {position}.")
    return queue


@router.post(
    "/queues/{queue_id}/items/{position}/skip",
    response={200: SkipOut, 404: ErrorOut},
)
def queue_skip_api(
    request: AuthenticatedHttpRequest, queue_id: int, position: int
) -> dict[str, Any]:
    """Skip an item: nothing is recorded, the item keeps waiting; the answer says
    which item waiting for you comes next."""
    queue = _queue_item(request, queue_id, position, write=True)
    following = queue_next_waiting(queue=queue, user=request.user, after=position)
    return {
        "next_position": following,
        "url": _item_url(queue, following) if following else None,
    }


@router.post(
    "/queues/{queue_id}/items/{position}/flag",
    response={201: FlagOut, 400: ErrorOut, 404: ErrorOut, 409: ErrorOut},
)
def queue_flag_api(
    request: AuthenticatedHttpRequest, queue_id: int, position: int, payload: FlagIn
) -> Status[QueueFlag]:
    """Flag an item with a reason: it waits for nobody until an owner resolves it."""
    queue = _queue_item(request, queue_id, position, write=True)
    flag = queue_item_flag(
        queue=queue, user=request.user, position=position, reason=payload.reason
    )
    return Status(201, flag)


@router.get("/projects/{project_id}/flags", response=list[FlagOut])
@paginate(LimitOffsetPagination)
def flag_list_api(
    request: AuthenticatedHttpRequest,
    project_id: int,
    state: str = "open",
) -> QuerySet[QueueFlag]:
    """The project's flagged queue items, newest first; state = open (the
    default), resolved or all. (A plain str: ninja's @paginate cannot resolve a
    postponed Literal annotation.)"""
    project = project_get_for_user(user=request.user, pk=project_id)
    if state not in FLAG_STATES:
        raise HttpError(400, "state must be one of: " + ", ".join(FLAG_STATES) + ".")
    return flag_list_for_project(project_id=project.pk, state=state)


@router.post(
    "/flags/{flag_id}/resolve",
    response={200: FlagOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut},
)
def flag_resolve_api(
    request: AuthenticatedHttpRequest, flag_id: int, payload: FlagResolveIn
) -> QueueFlag:
    """Resolve (unflag) a flag: owners only; the item waits for its reviewers again."""
    flag = flag_get_for_user(user=request.user, pk=flag_id, manage=True)
    return queue_flag_resolve(flag=flag, user=request.user, note=payload.note)
