"""Results list with filters, comments and review queues (helper D2)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import HttpRequest
from django.urls import reverse
from ninja import Query, Router, Status
from ninja.pagination import paginate

from evalsite.core.pagination import LimitOffsetPagination
from evalsite.review import services_queue
from evalsite.review.models import Comment
from evalsite.review.models_queue import QueueEntry, ReviewQueue
from evalsite.review.schemas_queue import (
    CommentIn,
    CommentOut,
    QueueFiltersIn,
    QueueIn,
    QueueOut,
    ResultFiltersIn,
    ResultListIn,
    ResultPageOut,
)
from evalsite.review.selectors import result_get_for_user, run_get_for_user
from evalsite.review.selectors_explorer import (
    ResultFilters,
    comment_list,
    queue_estimate,
    queue_get_for_user,
    queue_progress,
    results_filter,
    results_page,
)

router = Router(tags=["review"])


def _filters(data: ResultFiltersIn | QueueFiltersIn) -> ResultFilters:
    return ResultFilters(
        scorer=data.scorer_id,
        judge_passed=data.judge_passed,
        final_passed=data.passed,
        min_score=data.min_score,
        max_score=data.max_score,
        reviewed=data.reviewed,
        overridden=data.overridden,
        status=data.status,
        mine=data.assignee == "me",
        disagree=bool(data.disagree),
        q=data.q or "",
        sort=data.sort,
    )


@router.get("/runs/{run_id}/results", response=ResultPageOut)
def result_list(
    request: HttpRequest,
    run_id: int,
    filters: ResultListIn = Query(...),  # noqa: B008 - ninja's declaration style
) -> dict[str, Any]:
    """Filtered results, `{"items", "count"}` like every other list. Paginated by hand:
    ninja's @paginate wrapper breaks postponed annotations of a Query schema."""
    run = run_get_for_user(user=request.user, pk=run_id)
    qs = results_filter(run=run, params=_filters(filters), user=request.user)
    return {
        "count": qs.count(),
        "items": results_page(qs, offset=filters.offset, limit=filters.limit),
    }


def _comment_out(comment: Comment) -> dict[str, Any]:
    return {
        "id": comment.pk,
        "result_id": comment.result_id,
        "user": comment.user.get_username() if comment.user else None,
        "body": comment.body,
        "created_at": comment.created_at,
    }


@router.get("/results/{result_id}/comments", response=list[CommentOut])
@paginate(LimitOffsetPagination)
def comment_list_api(request: HttpRequest, result_id: int) -> list[dict[str, Any]]:
    result = result_get_for_user(user=request.user, pk=result_id)
    return [_comment_out(c) for c in comment_list(result=result)]


@router.post("/results/{result_id}/comments", response={201: CommentOut})
def comment_create_api(
    request: HttpRequest, result_id: int, payload: CommentIn
) -> Status:
    result = result_get_for_user(user=request.user, pk=result_id, write=True)
    comment = services_queue.comment_create(
        result=result, user=request.user, body=payload.body
    )
    return Status(201, _comment_out(comment))


def _queue_out(queue: ReviewQueue) -> dict[str, Any]:
    estimate = queue_estimate(queue=queue)
    entries = QueueEntry.objects.filter(queue=queue)
    assignees = dict(
        entries.filter(result__assignee__isnull=False)
        .values_list("result__assignee__username")
        .annotate(n=Count("id"))
        .values_list("result__assignee__username", "n")
    )
    return {
        "id": queue.pk,
        "run_id": queue.run_id,
        "name": queue.name,
        "source": queue.source,
        "filters": queue.filters,
        "blind": queue.blind,
        "stratified": queue.stratified or None,
        "size": queue.size,
        "truncated": queue.truncated,
        "reviewed": queue_progress(queue=queue)["reviewed"],
        "assignees": assignees,
        "result_ids": list(
            entries.order_by("position").values_list("result_id", flat=True)
        ),
        "estimate": estimate.__dict__ if estimate else None,
        "url": reverse("review:queue", args=[queue.project_id, queue.pk]),
        "created_at": queue.created_at,
    }


@router.post("/runs/{run_id}/queues", response={201: QueueOut})
def queue_create_api(request: HttpRequest, run_id: int, payload: QueueIn) -> Status:
    run = run_get_for_user(user=request.user, pk=run_id, write=True)
    source = ReviewQueue.Source(payload.source)
    if payload.stratified is not None:
        source = ReviewQueue.Source.STRATIFIED
    queue = services_queue.queue_create(
        run=run,
        user=request.user,
        filters=_filters(payload.filters),
        source=source,
        name=payload.name,
        blind=payload.blind,
        pass_share=payload.stratified.pass_share if payload.stratified else None,
        seed=payload.stratified.seed if payload.stratified else 0,
        assign_round_robin=payload.assign_round_robin,
    )
    return Status(201, _queue_out(queue))


@router.get("/queues/{queue_id}", response=QueueOut)
def queue_detail_api(request: HttpRequest, queue_id: int) -> dict[str, Any]:
    return _queue_out(queue_get_for_user(user=request.user, pk=queue_id))
