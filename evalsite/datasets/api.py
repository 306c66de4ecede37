"""Dataset endpoints: upload (multipart), list, detail, items.

Exports (/api/datasets/{id}/export.csv|jsonl) live in evalsite.exports.api.
"""

from __future__ import annotations

import json
from typing import Any

from ninja import File, Form, Router, Status
from ninja.files import UploadedFile
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.core.schemas import ErrorOut
from evalsite.datasets import services
from evalsite.datasets.models import Dataset
from evalsite.datasets.schemas import DatasetOut, ItemOut
from evalsite.datasets.selectors import dataset_get_for_user, dataset_list, item_list

router = Router(tags=["datasets"])

_READ_ERRORS = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}
_WRITE_ERRORS = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    422: ErrorOut,
}


def _parse_mapping(raw: str | None) -> dict[str, Any] | None:
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ApplicationError(
            f"The mapping is not valid JSON: {exc.msg}.",
            field_errors={"mapping": "Expected a JSON object."},
        ) from None
    if not isinstance(value, dict):
        raise ApplicationError(
            "The mapping must be a JSON object.",
            field_errors={"mapping": 'Like {"input": "question", "output": "answer"}.'},
        )
    return value


@router.post(
    "/projects/{project_id}/datasets",
    response={201: DatasetOut, **_WRITE_ERRORS},
    summary="Upload a dataset (CSV, JSONL or JSON array)",
    description=(
        "Multipart form: `file`, `name`, optional `mapping` (a JSON object: input, output, "
        'context, reference, context_format "json"|"delimited", context_delimiter, and '
        "the agent columns system_prompt, conversation (a JSON list of "
        '{"role", "content"}), tool_calls (a JSON list of {"name", "arguments", '
        '"result"}), expected_tool_calls and expected_trajectory (tool names or calls) '
        "and baseline_output; defaults from columns of those names) and optional "
        "`file_format` (csv|jsonl|json; default from the file name). Uploading under an "
        "existing name makes a new version. A bad file imports nothing and answers 400 "
        'with its first problems in `errors` (field like "row 3, column context").'
    ),
)
def dataset_upload(
    request: AuthenticatedHttpRequest,
    project_id: int,
    file: File[UploadedFile],
    name: Form[str],
    mapping: Form[str | None] = None,
    file_format: Form[str | None] = None,
) -> Status[Dataset]:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    dataset = services.dataset_create(
        project=project,
        user=request.user,
        file=file,
        name=name,
        mapping=_parse_mapping(mapping),
        file_format=file_format or None,
    )
    return Status(201, dataset)


@router.get(
    "/projects/{project_id}/datasets",
    response={200: list[DatasetOut], **_READ_ERRORS},
)
@paginate(LimitOffsetPagination)
def dataset_list_endpoint(
    request: AuthenticatedHttpRequest, project_id: int, archived: bool = False
) -> Any:
    """The project's dataset versions; `archived=true` lists the archived ones."""
    project = project_get_for_user(user=request.user, pk=project_id)
    return dataset_list(project=project, archived=archived)


@router.get("/datasets/{dataset_id}", response={200: DatasetOut, **_READ_ERRORS})
def dataset_detail(request: AuthenticatedHttpRequest, dataset_id: int) -> Dataset:
    return dataset_get_for_user(user=request.user, pk=dataset_id)


@router.get(
    "/datasets/{dataset_id}/items", response={200: list[ItemOut], **_READ_ERRORS}
)
@paginate(LimitOffsetPagination)
def dataset_items(request: AuthenticatedHttpRequest, dataset_id: int) -> Any:
    dataset = dataset_get_for_user(user=request.user, pk=dataset_id)
    return item_list(dataset=dataset)
