"""Writes for comments on results."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result
from evalsite.lib.text import text_check_storable
from evalsite.review.models import Comment

COMMENT_MAX_LENGTH = 10_000


@transaction.atomic(durable=True)
def comment_create(*, result: Result, user: User, body: str) -> Comment:
    body = (body or "").strip()
    text_check_storable(body, field="body")
    if not body:
        raise ApplicationError(
            "A comment cannot be empty.", field_errors={"body": "Write something."}
        )
    if len(body) > COMMENT_MAX_LENGTH:
        raise ApplicationError(
            f"A comment is at most {COMMENT_MAX_LENGTH} characters.",
            field_errors={"body": f"At most {COMMENT_MAX_LENGTH} characters."},
        )
    comment = Comment.objects.create(result=result, user=user, body=body)
    run = result.run
    audit_event(
        project=run.project,
        actor=user,
        action="comment.create",
        summary=f"commented: {body[:80]}{'…' if len(body) > 80 else ''}",
        after={"comment_id": comment.pk, "body": body},
        run=run,
        result=result,
    )
    return comment
