"""A finished run made from another tool's grades (the imports app's), written here
because evals is the only writer of runs, run scorers and results."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from evalsite.accounts.models import Project
from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import Result, Run, RunScorer
from scoring import compute_score, overridable_count, passes

BATCH_SIZE = 2000

# One grade: (item index, scorer name, analysis or None, reason, error).
Grade = tuple[int, str, dict[str, Any] | None, str, str]


@dataclass(frozen=True)
class ImportedScorer:
    name: str
    kind: str
    options: dict[str, Any]  # already validated for the kind
    # What the run page shows as the judge: the grader the other tool used.
    judge_snapshot: dict[str, Any] = field(default_factory=dict)


def imported_run_create(
    *,
    project: Project,
    user: User | None,
    dataset: Dataset,
    name: str,
    scorers: Sequence[ImportedScorer],
    grades: Iterable[Grade],
) -> Run:
    """A finished run holding the grades, in the caller's transaction.

    Not run_start: that one owns a durable transaction and queues the judging; here
    the judging happened in the other tool, and its grades are stored as judge
    results (final = judge's) for reviews to override. Each result's score and pass
    are ours from its analysis under its scorer's options, which reproduce the
    tool's, so an override recomputes them the same way.
    """
    now = timezone.now()
    run = Run.objects.create(
        project=project,
        dataset=dataset,
        name=name,
        status=Run.Status.DONE,
        created_by=user if user is not None and user.is_authenticated else None,
        started_at=now,
        finished_at=now,
    )
    run_scorers = {
        scorer.name: RunScorer.objects.create(
            run=run,
            scorer=None,
            name=scorer.name,
            kind=scorer.kind,
            options=scorer.options,
            judge=None,
            judge_snapshot=scorer.judge_snapshot,
            position=position,
        )
        for position, scorer in enumerate(scorers)
    }
    total = errors = 0
    batch: list[Grade] = []
    for grade in grades:
        batch.append(grade)
        if len(batch) >= BATCH_SIZE:
            errors += _results_insert(run, run_scorers, dataset, batch)
            total += len(batch)
            batch = []
    if batch:
        errors += _results_insert(run, run_scorers, dataset, batch)
        total += len(batch)
    run.total = total
    run.status = Run.Status.DONE_WITH_ERRORS if errors else Run.Status.DONE
    run.save(update_fields=["total", "status"])
    return run


def _results_insert(
    run: Run,
    run_scorers: dict[str, RunScorer],
    dataset: Dataset,
    batch: list[Grade],
) -> int:
    """Insert one batch of results; returns how many are errors."""
    indexes = [entry[0] for entry in batch]
    item_ids = dict(
        Item.objects.filter(
            dataset=dataset, index__gte=min(indexes), index__lte=max(indexes)
        ).values_list("index", "pk")
    )
    results = []
    errors = 0
    for index, scorer, analysis, reason, error in batch:
        run_scorer = run_scorers[scorer]
        result = Result(
            run=run, item_id=item_ids[index], run_scorer=run_scorer, attempts=1
        )
        if analysis is None:
            result.status = Result.Status.ERROR
            result.error = error or "The tool recorded no grade."
            errors += 1
        else:
            kind, options = run_scorer.kind, run_scorer.options
            score = compute_score(kind, analysis, options)
            passed = passes(kind, score, options, analysis=analysis)
            result.status = Result.Status.OK
            result.analysis = result.final_analysis = analysis
            result.overridable_count = overridable_count(kind, analysis)
            result.judge_score = result.final_score = score
            result.judge_passed = result.final_passed = passed
            result.reason = reason
        results.append(result)
    Result.objects.bulk_create(results)
    return errors
