"""Writes for review guidelines: each save adds the next version, never edits one."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError, ConflictError
from evalsite.lib.text import text_check_storable
from evalsite.review.models import Guideline, ReviewQueue

GUIDELINE_MAX_LENGTH = 50_000


def _clean_body(body: str) -> str:
    # Browsers post textareas with CRLF; store one kind of line end so an unchanged
    # text saved from the form and from the API compares equal.
    body = (body or "").replace("\r\n", "\n").replace("\r", "\n").rstrip()
    text_check_storable(body, field="body")
    if len(body) > GUIDELINE_MAX_LENGTH:
        raise ApplicationError(
            f"Guidelines are at most {GUIDELINE_MAX_LENGTH:,} characters "
            f"(this text has {len(body):,}).",
            field_errors={"body": f"At most {GUIDELINE_MAX_LENGTH:,} characters."},
        )
    return body


@transaction.atomic(durable=True)
def guideline_save(
    *,
    project: Project,
    queue: ReviewQueue | None = None,
    body: str,
    user: User,
    expected_version: int | None = None,
) -> Guideline:
    """Save `body` as the next version of the project's guidelines (queue None) or of
    one queue's. Returns the new version, or the latest one when the text is unchanged.

    1. Check the text (storable, at most GUIDELINE_MAX_LENGTH characters).
    2. Lock the project or queue row, so two saves get consecutive version numbers.
    3. Refuse a stale `expected_version` (the version the editor showed; 0 = none yet).
    4. Add the version and audit it in the same transaction.
    """
    if queue is not None and queue.project_id != project.pk:
        raise ApplicationError("That queue belongs to another project.")
    body = _clean_body(body)
    if queue is not None:
        ReviewQueue.objects.select_for_update().filter(pk=queue.pk).exists()
    else:
        Project.objects.select_for_update().filter(pk=project.pk).exists()
    latest = (
        Guideline.objects.filter(project=project, queue=queue)
        .order_by("-version")
        .first()
    )
    current = latest.version if latest is not None else 0
    if expected_version is not None and expected_version != current:
        raise ConflictError(
            f"Someone saved version {current} of these guidelines since you opened "
            f"version {expected_version}; copy your text, reload and save again.",
            field_errors={"expected_version": f"The current version is {current}."},
        )
    if latest is not None and latest.body == body:
        return latest
    if latest is None and not body:
        raise ApplicationError(
            "Write the guidelines first.", field_errors={"body": "Write something."}
        )
    try:
        with transaction.atomic():
            guideline = Guideline.objects.create(
                project=project,
                queue=queue,
                version=current + 1,
                body=body,
                created_by=user,
            )
    except IntegrityError as exc:  # SQLite has no row locks: a racing save won
        raise ConflictError(
            "Someone saved these guidelines at the same moment; reload and try again."
        ) from exc
    where = f"queue “{queue.name}”" if queue is not None else "the project"
    audit_event(
        project=project,
        actor=user,
        action="guideline.save",
        summary=(
            f"{user.get_username()} saved the guidelines of {where} as version "
            f"{guideline.version}" + ("" if body else " (empty)")
        ),
        before={"version": current} if current else None,
        after={
            "version": guideline.version,
            "guideline_id": guideline.pk,
            "queue_id": queue.pk if queue is not None else None,
        },
        run=queue.run if queue is not None else None,
    )
    return guideline
