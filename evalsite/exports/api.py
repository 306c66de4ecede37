"""Export endpoints: GET /api/runs/{id}/export.csv|jsonl|parquet,
/api/datasets/{id}/export.csv|jsonl.

Streamed (constant memory). Any project member may export; outsiders get 404. A run
export takes the same filters as GET /api/runs/{id}/results (scorer_id, passed, ...),
and `ids` to export only those results (the explorer's bulk export).
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from ninja import Query, Router

from evalsite.accounts.schemas import AuditQuery
from evalsite.accounts.selectors import audit_event_list_for, project_get_for_user
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.schemas import ErrorOut
from evalsite.datasets.selectors import dataset_get_for_user
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.exports import services
from evalsite.exports.audit import audit_csv_stream
from evalsite.exports.http import export_response
from evalsite.exports.pairwise import (
    PairwiseFormat,
    pairwise_export_filename,
    pairwise_export_stream,
)
from evalsite.exports.schemas import ExportQuery
from evalsite.review.pairwise.selectors import pairwise_get_for_user

router = Router(tags=["export"])

_ERRORS = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut}


def _openapi(media_type: str, what: str) -> dict[str, Any]:
    return {
        "responses": {
            200: {
                "description": f"{what}, streamed.",
                "content": {media_type: {"schema": {"type": "string"}}},
            }
        }
    }


def _run(
    request: AuthenticatedHttpRequest,
    run_id: int,
    fmt: services.Format,
    query: ExportQuery,
) -> StreamingHttpResponse:
    run = run_get_for_user(user=request.user, pk=run_id)
    stream = services.run_export_stream(
        run=run,
        fmt=fmt,
        query=query,
        user=request.user,
        excel=query.excel,
        ids=query.ids,
    )
    filtered = query.is_filtered() or query.ids is not None
    filename = services.export_filename(
        kind="run",
        pk=run.pk,
        fmt=fmt,
        filtered=filtered,
        excel=query.excel,
        name=run.name,
    )
    return export_response(stream, fmt=fmt, filename=filename)


@router.get(
    "/runs/{run_id}/export.csv",
    response=_ERRORS,
    openapi_extra=_openapi("text/csv", "One row per item × scorer"),
    summary="Export a run's results as CSV",
)
def run_export_csv(
    request: AuthenticatedHttpRequest, run_id: int, query: Query[ExportQuery]
) -> StreamingHttpResponse:
    return _run(request, run_id, "csv", query)


@router.get(
    "/runs/{run_id}/export.jsonl",
    response=_ERRORS,
    openapi_extra=_openapi("application/x-ndjson", "One JSON object per item × scorer"),
    summary="Export a run's results as JSON Lines",
)
def run_export_jsonl(
    request: AuthenticatedHttpRequest, run_id: int, query: Query[ExportQuery]
) -> StreamingHttpResponse:
    return _run(request, run_id, "jsonl", query)


@router.get(
    "/runs/{run_id}/export.parquet",
    response=_ERRORS,
    openapi_extra=_openapi(
        services.MEDIA_TYPES["parquet"],
        "One row per item × scorer, typed columns (the CSV's), one row group per "
        "10,000 rows",
    ),
    summary="Export a run's results as Parquet",
)
def run_export_parquet(
    request: AuthenticatedHttpRequest, run_id: int, query: Query[ExportQuery]
) -> StreamingHttpResponse:
    return _run(request, run_id, "parquet", query)


def _dataset(
    request: AuthenticatedHttpRequest,
    dataset_id: int,
    fmt: services.DatasetFormat,
    excel: bool,
) -> StreamingHttpResponse:
    dataset = dataset_get_for_user(user=request.user, pk=dataset_id)
    stream = services.dataset_export_stream(dataset=dataset, fmt=fmt, excel=excel)
    filename = services.export_filename(
        kind="dataset", pk=dataset.pk, fmt=fmt, excel=excel, name=dataset.name
    )
    return export_response(stream, fmt=fmt, filename=filename)


@router.get(
    "/datasets/{dataset_id}/export.csv",
    response=_ERRORS,
    openapi_extra=_openapi("text/csv", "One row per item"),
    summary="Export a dataset's items as CSV",
)
def dataset_export_csv(
    request: AuthenticatedHttpRequest, dataset_id: int, excel: bool = False
) -> StreamingHttpResponse:
    return _dataset(request, dataset_id, "csv", excel)


@router.get(
    "/datasets/{dataset_id}/export.jsonl",
    response=_ERRORS,
    openapi_extra=_openapi("application/x-ndjson", "One JSON object per item"),
    summary="Export a dataset's items as JSON Lines",
)
def dataset_export_jsonl(
    request: AuthenticatedHttpRequest, dataset_id: int
) -> StreamingHttpResponse:
    return _dataset(request, dataset_id, "jsonl", False)


@router.get(
    "/projects/{project_id}/audit/export.csv",
    response=_ERRORS,
    openapi_extra=_openapi("text/csv", "One row per event, newest first"),
    summary="Export a project's audit log (filtered like GET .../audit) as CSV",
)
def audit_export_csv(
    request: AuthenticatedHttpRequest,
    project_id: int,
    query: AuditQuery = Query(...),  # type: ignore[type-arg]  # noqa: B008 - ninja types Query as an Annotated alias
) -> StreamingHttpResponse:
    project = project_get_for_user(user=request.user, pk=project_id)
    filters = query.filters()
    events = audit_event_list_for(project=project, user=request.user, filters=filters)
    filename = services.export_filename(
        kind="audit",
        pk=project.pk,
        fmt="csv",
        filtered=filters.is_filtered(),
        name=project.name,
    )
    return export_response(audit_csv_stream(events), fmt="csv", filename=filename)


# A pairwise queue's answers (linked from the pairwise page).
_EXPORT_ERRORS = {401: ErrorOut, 404: ErrorOut}


def _export_openapi(fmt: PairwiseFormat) -> dict[str, Any]:
    return {
        "responses": {
            200: {
                "description": "One row per answer you may see, streamed.",
                "content": {
                    services.MEDIA_TYPES[fmt].split(";")[0]: {
                        "schema": {"type": "string"}
                    }
                },
            }
        }
    }


def _export(
    request: AuthenticatedHttpRequest,
    pairwise_id: int,
    fmt: PairwiseFormat,
    excel: bool,
) -> StreamingHttpResponse:
    queue = pairwise_get_for_user(user=request.user, pk=pairwise_id)
    stream = pairwise_export_stream(
        queue=queue, user=request.user, fmt=fmt, excel=excel
    )
    filename = pairwise_export_filename(queue=queue, fmt=fmt, excel=excel)
    return export_response(stream, fmt=fmt, filename=filename)


@router.get(
    "/pairwise/{pairwise_id}/export.csv",
    response=_EXPORT_ERRORS,
    openapi_extra=_export_openapi("csv"),
    summary="Export a pairwise queue's answers as CSV",
)
def pairwise_export_csv_api(
    request: AuthenticatedHttpRequest, pairwise_id: int, excel: bool = False
) -> StreamingHttpResponse:
    """One row per answer, blind like GET /api/pairwise/{id}/preferences (answers on
    a pair still taking answers are left out until you answer it): pair, both runs'
    items, input, output A and B (the runs', not the sides), the side shown left,
    reviewer, choice (a, b, tie) and the run it prefers, reason, seconds, times.
    Text cells are neutralised against spreadsheet formulas; `excel=true` adds a
    UTF-8 byte-order mark and names the file …-excel.csv."""
    return _export(request, pairwise_id, "csv", excel)


@router.get(
    "/pairwise/{pairwise_id}/export.jsonl",
    response=_EXPORT_ERRORS,
    openapi_extra=_export_openapi("jsonl"),
    summary="Export a pairwise queue's answers as JSON Lines",
)
def pairwise_export_jsonl_api(
    request: AuthenticatedHttpRequest, pairwise_id: int
) -> StreamingHttpResponse:
    """The CSV's rows as JSON objects with JSON types (numbers, null), exact text."""
    return _export(request, pairwise_id, "jsonl", False)
