from __future__ import annotations

from datetime import datetime

from ninja import Schema
from pydantic import ConfigDict, Field

from evalsite.core.schemas import ObjectId
from evalsite.evals.audits.selectors import AuditFigures, bias_audit_figures
from evalsite.evals.audits.services import DEFAULT_SAMPLE_SIZE
from evalsite.evals.models import BiasAudit


class BiasAuditIn(Schema):
    model_config = ConfigDict(extra="forbid")
    run_scorer_id: ObjectId
    # Checked by the service, which names the allowed range in its error.
    sample_size: int = DEFAULT_SAMPLE_SIZE
    seed: int = Field(default=0)


class ChangeFigureOut(Schema):
    change: str
    label: str
    applicable: bool
    not_applicable: str
    compared: int
    same: int
    share_same: float | None
    ci_low: float | None
    ci_high: float | None
    flipped_to_pass: int
    flipped_to_fail: int
    pending: int
    errors: int


class BiasAuditOut(Schema):
    id: int
    run_id: int
    run_scorer_id: int
    scorer: str
    kind: str
    audit_run_id: int
    status: str
    sample_size: int
    sampled: int
    seed: int
    created_at: datetime

    @staticmethod
    def resolve_scorer(audit: BiasAudit) -> str:
        return audit.run_scorer.name

    @staticmethod
    def resolve_kind(audit: BiasAudit) -> str:
        return audit.run_scorer.kind

    @staticmethod
    def resolve_status(audit: BiasAudit) -> str:
        return audit.audit_run.status

    @staticmethod
    def resolve_sampled(audit: BiasAudit) -> int:
        return len(audit.sample)


class BiasAuditDetailOut(BiasAuditOut):
    sample: list[int]
    total: int
    done: int
    changes: list[ChangeFigureOut]

    @staticmethod
    def _figures(audit: BiasAudit) -> AuditFigures:
        cached: AuditFigures | None = getattr(audit, "_figures_cache", None)
        if cached is None:
            cached = bias_audit_figures(audit=audit)
            audit._figures_cache = cached  # type: ignore[attr-defined]
        return cached

    @staticmethod
    def resolve_total(audit: BiasAudit) -> int:
        return BiasAuditDetailOut._figures(audit).total

    @staticmethod
    def resolve_done(audit: BiasAudit) -> int:
        return BiasAuditDetailOut._figures(audit).done

    @staticmethod
    def resolve_changes(audit: BiasAudit) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for f in BiasAuditDetailOut._figures(audit).changes:
            low, high = f.interval
            out.append(
                {
                    "change": f.change,
                    "label": f.label,
                    "applicable": not f.not_applicable,
                    "not_applicable": f.not_applicable,
                    "compared": f.compared,
                    "same": f.same,
                    "share_same": f.share,
                    "ci_low": low,
                    "ci_high": high,
                    "flipped_to_pass": f.flipped_to_pass,
                    "flipped_to_fail": f.flipped_to_fail,
                    "pending": f.pending,
                    "errors": f.errors,
                }
            )
        return out
