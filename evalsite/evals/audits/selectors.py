"""Reads of bias audits: the user-scoped lookup, the lists, and the figures recounted
from the audit run's results every time they are read."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.evals.models import BiasAudit, Result, Run, RunScorer
from scoring.pairwise import wilson_interval
from scoring.perturbation import CHANGE_LABELS, CHANGES, not_applicable_reason

AnyUser = User | AnonymousUser


def bias_audit_get_for_user(
    *,
    user: AnyUser,
    pk: int,
    run_id: int | None = None,
    manage: bool = False,
) -> BiasAudit:
    """An audit of a project the user belongs to; 404 for outsiders (and for an
    audit of another run than `run_id`), 403 by role."""
    audit = (
        BiasAudit.objects.select_related("run", "run_scorer", "audit_run")
        .filter(pk=pk)
        .first()
    )
    if audit is None or (run_id is not None and audit.run_id != run_id):
        raise Http404("No such bias audit.")
    audit.project = project_get_for_user(user=user, pk=audit.project_id, manage=manage)
    return audit


def run_scorer_in_run(*, run: Run, pk: int) -> RunScorer:
    """A scorer of `run` (not of an audit's own run); 404 otherwise."""
    found = RunScorer.objects.filter(run=run, pk=pk, perturbation="").first()
    if found is None:
        raise Http404(f"Scorer {pk} is not a scorer of this run.")
    return found


def bias_audit_list(*, run: Run) -> QuerySet[BiasAudit]:
    return BiasAudit.objects.filter(run=run).select_related("run_scorer", "audit_run")


@dataclass(frozen=True)
class ChangeFigure:
    """One change's figures: of the `compared` sampled items judged both originally
    and with the change, how many kept their verdict (pass or fail)."""

    change: str
    label: str
    not_applicable: str  # why not, or ""
    compared: int = 0
    same: int = 0
    flipped_to_pass: int = 0
    flipped_to_fail: int = 0
    pending: int = 0
    errors: int = 0

    @property
    def share(self) -> float | None:
        return self.same / self.compared if self.compared else None

    @property
    def percent(self) -> float | None:
        return None if self.share is None else 100 * self.share

    @property
    def interval(self) -> tuple[float | None, float | None]:
        return wilson_interval(self.same, self.compared)


@dataclass(frozen=True)
class AuditFigures:
    changes: list[ChangeFigure]
    total: int
    done: int

    @property
    def finished(self) -> bool:
        return self.done >= self.total


def bias_audit_figures(*, audit: BiasAudit) -> AuditFigures:
    """Per change, the share of sampled verdicts that stayed the same, counted from
    the rows: the audited run's judge verdict of each sampled item against the audit
    run's verdict of the same item under the change."""
    original = dict(
        Result.objects.filter(
            run_id=audit.run_id,
            run_scorer_id=audit.run_scorer_id,
            item_id__in=audit.sample,
        ).values_list("item_id", "judge_passed")
    )
    rows = Result.objects.filter(run_id=audit.audit_run_id).values_list(
        "run_scorer__perturbation", "item_id", "status", "judge_passed"
    )
    counts: dict[str, dict[str, int]] = {}
    total = done = 0
    for change, item_id, status, passed in rows:
        c = counts.setdefault(
            change,
            {
                "compared": 0,
                "same": 0,
                "to_pass": 0,
                "to_fail": 0,
                "pending": 0,
                "errors": 0,
            },
        )
        total += 1
        if status == Result.Status.PENDING:
            c["pending"] += 1
            continue
        done += 1
        before = original.get(item_id)
        if status != Result.Status.OK or passed is None or before is None:
            c["errors"] += 1
            continue
        c["compared"] += 1
        if passed == before:
            c["same"] += 1
        elif passed:
            c["to_pass"] += 1
        else:
            c["to_fail"] += 1
    kind = audit.run_scorer.kind
    figures = []
    for change in CHANGES:
        found = counts.get(change)
        if found is None:
            figures.append(
                ChangeFigure(
                    change=change,
                    label=CHANGE_LABELS[change],
                    not_applicable=not_applicable_reason(kind, change)
                    or "Not judged in this audit.",
                )
            )
            continue
        figures.append(
            ChangeFigure(
                change=change,
                label=CHANGE_LABELS[change],
                not_applicable="",
                compared=found["compared"],
                same=found["same"],
                flipped_to_pass=found["to_pass"],
                flipped_to_fail=found["to_fail"],
                pending=found["pending"],
                errors=found["errors"],
            )
        )
    return AuditFigures(changes=figures, total=total, done=done)
