"""Bias audits: judge a seeded sample of a run's results again with controlled changes.

The audit's judge calls go through the same path as a run's: a hidden run (one run
scorer per change, each a copy of the audited scorer's snapshot with its
`perturbation`) whose pending results the dispatcher judges under the judge
connection's limiter, so an audit is cancelled, retried and recovered as any run is.
"""

from __future__ import annotations

import random

from django.contrib.auth.models import User
from django.db import transaction

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.judges.versions import judge_version_for
from evalsite.evals.models import BiasAudit, Result, Run, RunScorer
from evalsite.evals.runs.services import RUN_FANOUT_TASK
from evalsite.lib.tasks import task_send_on_commit
from scoring import KINDS
from scoring.perturbation import CHANGE_LABELS, CHANGES, change_applies

DEFAULT_SAMPLE_SIZE = 100
MAX_SAMPLE_SIZE = 1000
# Seeds are stored in a signed 64-bit column.
MAX_SEED = 2**63 - 1


def _eligible_items(*, run: Run, run_scorer: RunScorer) -> list[int]:
    """Items whose result has a judge verdict to compare with, by id."""
    return sorted(
        Result.objects.filter(
            run=run,
            run_scorer=run_scorer,
            status=Result.Status.OK,
            judge_passed__isnull=False,
        ).values_list("item_id", flat=True)
    )


def _check(*, run: Run, run_scorer: RunScorer, sample_size: int, seed: int) -> None:
    errors: dict[str, str] = {}
    if run_scorer.run_id != run.pk:
        errors["run_scorer_id"] = "Not a scorer of this run."
    elif run_scorer.kind not in KINDS or not KINDS[run_scorer.kind].needs_judge:
        errors["run_scorer_id"] = (
            f"{run_scorer.name} has no judge: there is no verdict to audit."
        )
    elif run_scorer.judge_id is None:
        errors["run_scorer_id"] = (
            f"{run_scorer.name}'s judge connection was deleted: nothing can judge "
            "the sample again."
        )
    if not 1 <= sample_size <= MAX_SAMPLE_SIZE:
        errors["sample_size"] = (
            f"Choose a sample size between 1 and {MAX_SAMPLE_SIZE} (got {sample_size})."
        )
    if not 0 <= seed <= MAX_SEED:
        errors["seed"] = f"The seed must be between 0 and {MAX_SEED}."
    if not errors and not run.is_finished:
        errors["run_id"] = "The run is still judging: audit it once it has finished."
    if errors:
        first = next(iter(errors.items()))
        raise ApplicationError(f"{first[0]}: {first[1]}", field_errors=errors)


def audit_sample(*, item_ids: list[int], size: int, seed: int) -> list[int]:
    """`size` of `item_ids` (all when there are fewer), drawn with `seed`: the same
    seed on the same results draws the same sample."""
    ordered = sorted(item_ids)
    if len(ordered) <= size:
        return ordered
    return random.Random(seed).sample(ordered, size)


def bias_audit_start(
    *,
    project: Project,
    user: User | None,
    run: Run,
    run_scorer: RunScorer,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    seed: int = 0,
) -> BiasAudit:
    """Start a bias audit of `run_scorer` of `run`.

    1. Check the scorer (judged, still has a judge), the size, the seed and that the
       run has finished; draw the sample of its judged results with `seed`.
    2. Create the hidden audit run: one run scorer per change that applies to the
       kind ("unchanged" included, the noise floor), copying the audited snapshot's
       kind, options and judge; one pending result per (sampled item, change).
    3. Record the audit and its sample, audit it, and after commit send the run's
       fan-out task.
    """
    _check(run=run, run_scorer=run_scorer, sample_size=sample_size, seed=seed)
    sample = audit_sample(
        item_ids=_eligible_items(run=run, run_scorer=run_scorer),
        size=sample_size,
        seed=seed,
    )
    if not sample:
        raise ApplicationError(
            f"run_scorer_id: {run_scorer.name} has no judged result in this run to audit.",
            field_errors={"run_scorer_id": "No judged result to audit."},
        )
    changes = [c for c in CHANGES if change_applies(run_scorer.kind, c)]
    with transaction.atomic(durable=True):
        audit_run = Run.objects.create(
            project=project,
            dataset=run.dataset,
            name=f"Bias audit of {run} · {run_scorer.name}"[:200],
            created_by=user if user and user.is_authenticated else None,
            purpose=Run.Purpose.AUDIT,
            rejudge_of=run,
        )
        scorers = [
            RunScorer.objects.create(
                run=audit_run,
                scorer=run_scorer.scorer,
                name=f"{run_scorer.name} · {CHANGE_LABELS[change]}"[:200],
                kind=run_scorer.kind,
                options=run_scorer.options,
                judge=run_scorer.judge,
                judge_snapshot=run_scorer.judge_snapshot,
                position=position,
                perturbation=change,
                # The audited judge itself: a change is made to the item, not the judge.
                judge_version=run_scorer.judge_version,
            )
            for position, change in enumerate(changes)
        ]
        for scorer in scorers:
            judge_version_for(scorer, user=user)
        Result.objects.bulk_create(
            Result(run=audit_run, item_id=item_id, run_scorer=scorer)
            for scorer in scorers
            for item_id in sample
        )
        audit_run.total = len(scorers) * len(sample)
        audit_run.save(update_fields=["total"])
        audit = BiasAudit.objects.create(
            project=project,
            run=run,
            run_scorer=run_scorer,
            audit_run=audit_run,
            sample_size=sample_size,
            seed=seed,
            sample=sample,
            created_by=user if user and user.is_authenticated else None,
        )
        audit_event(
            project=project,
            actor=user,
            action="bias_audit.start",
            summary=(
                f"started a bias audit of {run_scorer.name} on {run} "
                f"({len(sample)} results × {len(changes)} changes, seed {seed})"
            ),
            after={
                "run_scorer_id": run_scorer.pk,
                "sample_size": sample_size,
                "sampled": len(sample),
                "seed": seed,
                "changes": changes,
                "audit_run_id": audit_run.pk,
            },
            run=run,
            object_id=audit.pk,
            object_label=str(audit),
        )
        task_send_on_commit(RUN_FANOUT_TASK, audit_run.pk)
    return audit
