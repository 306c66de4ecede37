"""Export pages: the run's results (whole or the explorer's current filter) and datasets.

Any member may export (viewers too); outsiders get 404. `?excel=1` adds a UTF-8 BOM to
CSV (and names the file …-excel.csv); `ids` (repeated) exports only those results of the
run (the explorer's bulk export); every other query parameter is the results explorer's
filter. Runs export as CSV, JSONL or Parquet; datasets and pairwise queues' answers as CSV
or JSONL.
"""

from __future__ import annotations

from django.http import HttpResponse, HttpResponseBase
from django.views.decorators.http import require_GET

from evalsite.accounts.forms import AuditLogForm
from evalsite.accounts.selectors import audit_event_list_for, project_get_for_user
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.datasets.selectors import dataset_get_for_user
from evalsite.evals.runs.selectors import run_get_for_user
from evalsite.exports import services
from evalsite.exports.audit import audit_csv_stream
from evalsite.exports.estimates import estimates_csv_stream
from evalsite.exports.http import export_response
from evalsite.exports.pairwise import (
    PairwiseFormat,
    pairwise_export_filename,
    pairwise_export_stream,
)
from evalsite.review.estimates.selectors import run_estimates
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.pairwise.selectors import pairwise_get_for_user

_TRUE = {"1", "true", "on", "yes"}


def _excel(request: AuthenticatedHttpRequest) -> bool:
    return request.GET.get("excel", "").lower() in _TRUE


def _ids(request: AuthenticatedHttpRequest) -> list[int] | None:
    """The repeated `ids` parameter, or None when absent (ApplicationError if bad)."""
    raw = request.GET.getlist("ids")
    if not raw:
        return None
    try:
        ids = [int(value) for value in raw]
    except ValueError:
        ids = []
    if not ids or any(not 1 <= pk < 2**63 for pk in ids):
        raise ApplicationError(
            "ids: each must be a result id.", field_errors={"ids": "Not an id."}
        )
    return ids


def _run_export(
    request: AuthenticatedHttpRequest,
    project_id: int,
    run_id: int,
    fmt: services.Format,
) -> HttpResponseBase:
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    try:
        query = ResultQuery.from_querydict(
            request.GET, run_scorers=run.run_scorers.all()
        )
        ids = _ids(request)
        excel = _excel(request)
        stream = services.run_export_stream(
            run=run,
            fmt=fmt,
            query=query,
            user=request.user,
            excel=excel,
            ids=ids,
        )
    except ApplicationError as exc:  # a ResultQueryError, or ids not of this run
        return HttpResponse(exc.message, status=400, content_type="text/plain")
    filtered = query.is_filtered() or ids is not None
    filename = services.export_filename(
        kind="run", pk=run.pk, fmt=fmt, filtered=filtered, excel=excel, name=run.name
    )
    return export_response(stream, fmt=fmt, filename=filename)


@require_GET
def run_csv(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponseBase:
    return _run_export(request, project_id, run_id, "csv")


@require_GET
def run_jsonl(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponseBase:
    return _run_export(request, project_id, run_id, "jsonl")


@require_GET
def run_parquet(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponseBase:
    return _run_export(request, project_id, run_id, "parquet")


def _dataset_export(
    request: AuthenticatedHttpRequest,
    project_id: int,
    dataset_id: int,
    fmt: services.DatasetFormat,
) -> HttpResponseBase:
    dataset = dataset_get_for_user(
        user=request.user, pk=dataset_id, project_id=project_id
    )
    excel = _excel(request)
    stream = services.dataset_export_stream(dataset=dataset, fmt=fmt, excel=excel)
    filename = services.export_filename(
        kind="dataset", pk=dataset.pk, fmt=fmt, excel=excel, name=dataset.name
    )
    return export_response(stream, fmt=fmt, filename=filename)


@require_GET
def dataset_csv(
    request: AuthenticatedHttpRequest, project_id: int, dataset_id: int
) -> HttpResponseBase:
    return _dataset_export(request, project_id, dataset_id, "csv")


@require_GET
def dataset_jsonl(
    request: AuthenticatedHttpRequest, project_id: int, dataset_id: int
) -> HttpResponseBase:
    return _dataset_export(request, project_id, dataset_id, "jsonl")


@require_GET
def audit_csv(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponseBase:
    """The project's audit log, with the page's filters, as CSV."""
    project = project_get_for_user(user=request.user, pk=project_id)
    form = AuditLogForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Invalid filters.", status=400, content_type="text/plain")
    filters = form.filters()
    events = audit_event_list_for(project=project, user=request.user, filters=filters)
    filename = services.export_filename(
        kind="audit",
        pk=project.pk,
        fmt="csv",
        filtered=filters.is_filtered(),
        name=project.name,
    )
    return export_response(audit_csv_stream(events), fmt="csv", filename=filename)


@require_GET
def run_estimates_csv(
    request: AuthenticatedHttpRequest, project_id: int, run_id: int
) -> HttpResponseBase:
    """The run's corrected figures (calibration samples), one row per scorer and
    figure."""
    run = run_get_for_user(user=request.user, pk=run_id, project_id=project_id)
    filename = services.export_filename(
        kind="estimates-run", pk=run.pk, fmt="csv", name=run.name
    )
    stream = estimates_csv_stream(run_estimates(run_id=run.pk))
    return export_response(stream, fmt="csv", filename=filename)


def _pairwise_export(
    request: AuthenticatedHttpRequest,
    project_id: int,
    pairwise_id: int,
    fmt: PairwiseFormat,
) -> HttpResponseBase:
    """A pairwise queue's answers, linked from its page; the rows and their blindness
    are exports.pairwise's."""
    queue = pairwise_get_for_user(
        user=request.user, pk=pairwise_id, project_id=project_id
    )
    excel = fmt == "csv" and _excel(request)
    stream = pairwise_export_stream(
        queue=queue, user=request.user, fmt=fmt, excel=excel
    )
    filename = pairwise_export_filename(queue=queue, fmt=fmt, excel=excel)
    return export_response(stream, fmt=fmt, filename=filename)


@require_GET
def pairwise_export_csv(
    request: AuthenticatedHttpRequest, project_id: int, pairwise_id: int
) -> HttpResponseBase:
    return _pairwise_export(request, project_id, pairwise_id, "csv")


@require_GET
def pairwise_export_jsonl(
    request: AuthenticatedHttpRequest, project_id: int, pairwise_id: int
) -> HttpResponseBase:
    return _pairwise_export(request, project_id, pairwise_id, "jsonl")
