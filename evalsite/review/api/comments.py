"""Review API: the comments on a result."""

from __future__ import annotations

from django.db.models import QuerySet
from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals.models import Comment
from evalsite.evals.results.comments import comment_create
from evalsite.evals.results.selectors import comment_list
from evalsite.evals.runs.selectors import result_get_for_user
from evalsite.review.schemas import CommentIn, CommentOut
from evalsite.review.selectors.blind import result_is_blind

router = Router(tags=["review"])


@router.get("/results/{result_id}/comments", response=list[CommentOut])
@paginate(LimitOffsetPagination)
def comment_list_api(
    request: AuthenticatedHttpRequest, result_id: int
) -> QuerySet[Comment]:
    result = result_get_for_user(user=request.user, pk=result_id)
    comments = comment_list(result=result)
    if result_is_blind(user=request.user, result=result):
        # Blind review: others' comments may carry their verdict; yours stay.
        comments = comments.filter(user_id=request.user.pk)
    return comments


@router.post("/results/{result_id}/comments", response={201: CommentOut})
def comment_create_api(
    request: AuthenticatedHttpRequest, result_id: int, payload: CommentIn
) -> Status[Comment]:
    result = result_get_for_user(user=request.user, pk=result_id, write=True)
    comment = comment_create(result=result, user=request.user, body=payload.body)
    return Status(201, comment)
