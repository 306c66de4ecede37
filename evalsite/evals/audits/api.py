"""REST endpoints of bias audits: list a run's, read one, start one (owners)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from ninja import Router, Status
from ninja.pagination import paginate

from evalsite.core.exceptions import ApplicationError
from evalsite.core.http import AuthenticatedHttpRequest
from evalsite.core.pagination import LimitOffsetPagination
from evalsite.evals.audits import selectors, services
from evalsite.evals.audits.schemas import BiasAuditDetailOut, BiasAuditIn, BiasAuditOut
from evalsite.evals.models import BiasAudit
from evalsite.evals.runs.selectors import run_get_for_user

router = Router(tags=["bias audits"])


@router.get("/runs/{run_id}/bias-audits", response=list[BiasAuditOut])
@paginate(LimitOffsetPagination)
def bias_audit_list(request: AuthenticatedHttpRequest, run_id: int) -> Any:
    run = run_get_for_user(user=request.user, pk=run_id)
    return selectors.bias_audit_list(run=run)


@router.get(
    "/bias-audits/{audit_id}", response=BiasAuditDetailOut, url_name="bias_audit"
)
def bias_audit_detail(request: AuthenticatedHttpRequest, audit_id: int) -> BiasAudit:
    return selectors.bias_audit_get_for_user(user=request.user, pk=audit_id)


@router.post("/runs/{run_id}/bias-audits", response={202: BiasAuditDetailOut})
def bias_audit_start(
    request: AuthenticatedHttpRequest, run_id: int, payload: BiasAuditIn
) -> Status[BiasAudit]:
    # It pays the judge again for every sampled result and change: owners only.
    run = run_get_for_user(user=request.user, pk=run_id, manage=True)
    try:
        run_scorer = selectors.run_scorer_in_run(run=run, pk=payload.run_scorer_id)
    except Http404 as exc:
        raise ApplicationError(
            str(exc), field_errors={"run_scorer_id": str(exc)}
        ) from exc
    audit = services.bias_audit_start(
        project=run.project,
        user=request.user,
        run=run,
        run_scorer=run_scorer,
        sample_size=payload.sample_size,
        seed=payload.seed,
    )
    return Status(202, audit)
