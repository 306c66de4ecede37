"""Archive, unarchive and delete over the API: the same rules as the pages."""

from __future__ import annotations

from ninja import Router, Schema, Status

from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.schemas import ErrorOut
from evalsite.review.housekeeping import services
from evalsite.review.housekeeping.selectors import (
    Kind,
    archive_needs_owner,
    housekeeping_get_for_user,
    object_label,
)

router = Router(tags=["housekeeping"])
_ERRORS: dict[int, type[Schema]] = {403: ErrorOut, 404: ErrorOut, 409: ErrorOut}


class ArchivedOut(Schema):
    kind: Kind
    id: int
    name: str
    archived: bool


class DeletedOut(Schema):
    kind: Kind
    id: int
    name: str
    # Rows deleted by kind ("results": 1200), the object's own first.
    deleted: dict[str, int]
    # Rows kept that lost their link to what was deleted.
    unlinked: dict[str, int]


class DeletionStartedOut(Schema):
    kind: Kind
    id: int
    name: str
    # "deleting": a worker deletes it (too many rows for a request); meanwhile it
    # is archived and refuses changes, then GET on it answers 404.
    status: str


def _archive(
    request: AuthenticatedHttpRequest,
    project_id: int,
    kind: Kind,
    pk: int,
    archived: bool,
) -> ArchivedOut:
    obj = housekeeping_get_for_user(
        user=request.user,
        kind=kind,
        pk=pk,
        project_id=project_id,
        write=True,
        manage=archive_needs_owner(kind),
    )
    services.object_set_archived(
        kind=kind, obj=obj, user=request.user, archived=archived
    )
    return ArchivedOut(
        kind=kind, id=obj.pk, name=object_label(kind, obj), archived=archived
    )


@router.post(
    "/projects/{project_id}/{housekeeping_kind:kind}/{pk}/archive",
    response={200: ArchivedOut, **_ERRORS},
)
def archive(
    request: AuthenticatedHttpRequest, project_id: int, kind: Kind, pk: int
) -> ArchivedOut:
    """Hide the object from lists and pickers (undo with unarchive)."""
    return _archive(request, project_id, kind, pk, True)


@router.post(
    "/projects/{project_id}/{housekeeping_kind:kind}/{pk}/unarchive",
    response={200: ArchivedOut, **_ERRORS},
)
def unarchive(
    request: AuthenticatedHttpRequest, project_id: int, kind: Kind, pk: int
) -> ArchivedOut:
    return _archive(request, project_id, kind, pk, False)


@router.delete(
    "/projects/{project_id}/{housekeeping_kind:kind}/{pk}",
    response={200: DeletedOut, 202: DeletionStartedOut, **_ERRORS},
)
def delete(
    request: AuthenticatedHttpRequest, project_id: int, kind: Kind, pk: int
) -> DeletedOut | Status[DeletionStartedOut]:
    """Delete the object and everything that goes with it (owners only); 202 when
    it has more rows than a request deletes (a worker does it); 409 with the reason
    while a queued or running run or an open queue needs it, or it is being deleted."""
    obj = housekeeping_get_for_user(
        user=request.user, kind=kind, pk=pk, project_id=project_id, manage=True
    )
    plan = services.object_delete_request(kind=kind, obj=obj, user=request.user)
    if plan.background:
        return Status(
            202, DeletionStartedOut(kind=kind, id=pk, name=plan.name, status="deleting")
        )
    return DeletedOut(
        kind=kind,
        id=pk,
        name=plan.name,
        deleted=plan.counts,
        unlinked={line.label: line.count for line in plan.unlinks},
    )
