"""Review API: review queues."""

from __future__ import annotations

from ninja import Router, Status
from ninja.errors import HttpError

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.schemas import ErrorOut
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.review.models import ReviewQueue
from evalsite.review.queues.schemas import QueueIn, QueueOut
from evalsite.review.queues.selectors import queue_get_for_user
from evalsite.review.queues.services import queue_create

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
