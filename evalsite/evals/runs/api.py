"""REST endpoints for judges, scorers and runs (DESIGN.md paths)."""

from __future__ import annotations

from django.http import Http404
from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.accounts.selectors import project_get_for_user, require_run_start
from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals.models import Run
from evalsite.evals.runs import selectors, services
from evalsite.evals.runs.schemas import (
    RetryOut,
    RunDetailOut,
    RunIn,
    RunOut,
    RunStartedOut,
)
from evalsite.evals.scorers.selectors import scorers_in_project

# --------------------------------------------------------------------------- scorers


# --------------------------------------------------------------------------- runs


router = Router(tags=["judges, scorers, runs"])


@router.get("/projects/{project_id}/runs", response=list[RunOut])
@paginate(LimitOffsetPagination)
def run_list(
    request: AuthenticatedHttpRequest, project_id: int, archived: bool = False
) -> list[Run]:
    """The project's runs; `archived=true` lists the archived ones instead."""
    project = project_get_for_user(user=request.user, pk=project_id)
    runs = list(selectors.run_list(project_id=project.pk, archived=archived)[:1000])
    progress = selectors.run_progress_many(runs=runs)
    for run in runs:
        run.progress = progress[run.pk]
    return runs


@router.post("/projects/{project_id}/runs", response={202: RunStartedOut})
def run_create(
    request: AuthenticatedHttpRequest, project_id: int, payload: RunIn
) -> Status[Run]:
    project = project_get_for_user(user=request.user, pk=project_id, write=True)
    try:
        dataset = selectors.dataset_get_in_project(
            project_id=project.pk, pk=payload.dataset_id
        )
        scorers = scorers_in_project(project_id=project.pk, ids=payload.scorer_ids)
    except Http404 as exc:
        field = "dataset_id" if "dataset" in str(exc) else "scorer_ids"
        raise ApplicationError(str(exc), field_errors={field: str(exc)}) from exc
    require_run_start(
        membership=project.membership,
        judges=[s.judge for s in scorers],
    )
    run = services.run_start(
        project=project,
        user=request.user,
        dataset=dataset,
        scorers=scorers,
        name=payload.name,
    )
    return Status(202, run)


@router.get("/runs/{run_id}", response=RunDetailOut, url_name="run_detail")
def run_detail(request: AuthenticatedHttpRequest, run_id: int) -> Run:
    return selectors.run_get_for_user(user=request.user, pk=run_id)


@router.post("/runs/{run_id}/cancel", response=RunOut)
def run_cancel(request: AuthenticatedHttpRequest, run_id: int) -> Run:
    run = selectors.run_get_for_user(user=request.user, pk=run_id, write=True)
    return services.run_cancel(run=run, user=request.user)


@router.post("/runs/{run_id}/rejudge", response={202: RunStartedOut})
def run_rejudge(request: AuthenticatedHttpRequest, run_id: int) -> Status[Run]:
    """Owners: a new run over the same items with each scorer's current judge
    version, linked by rejudge_of; the old run's results are never changed."""
    run = selectors.run_get_for_user(user=request.user, pk=run_id, manage=True)
    require_run_start(
        membership=run.project.membership,
        judges=[rs.judge for rs in run.run_scorers.select_related("judge")],
    )
    return Status(202, services.run_rejudge(run=run, user=request.user))


@router.post("/runs/{run_id}/retry-failed", response=RetryOut)
def run_retry_failed(request: AuthenticatedHttpRequest, run_id: int) -> Run:
    run = selectors.run_get_for_user(user=request.user, pk=run_id, write=True)
    # A retry calls the run's judges again: the same rule as starting the run.
    require_run_start(
        membership=run.project.membership,
        judges=[rs.judge for rs in run.run_scorers.select_related("judge")],
    )
    count = services.run_retry_failed(run=run, user=request.user)
    run.refresh_from_db()
    run.retried = count  # type: ignore[attr-defined]  # read by RetryOut
    return run
