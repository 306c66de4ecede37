"""Import another tool's file: dataset versions, and its grades as finished runs (one
per promptfoo prompt x provider, one scorer per check) whose results reviewers override
like any judge's.

Here rather than in evalsite.datasets.imports (which reads the files) because the run
is the evals app's and datasets sits below evals in the app layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.datasets.imports.base import ImportSummary
from evalsite.datasets.imports.services import (
    GroupSpill,
    ImportSpill,
    import_dataset_create,
    import_spill,
)
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.parsing import Problem
from evalsite.datasets.services import DatasetUploadError, UploadFile
from evalsite.evals.models import Result, Run, RunScorer
from evalsite.lib.text import text_check_storable
from scoring import (
    ScoringError,
    compute_score,
    overridable_count,
    passes,
    validate_options,
)

BATCH_SIZE = 2000


@dataclass
class ImportOutcome:
    dataset: Dataset
    run: Run | None
    summary: ImportSummary
    # Every dataset version and run the import made, one per group (promptfoo: per
    # prompt x provider), in the file's order; `dataset` and `run` are the first.
    datasets: list[Dataset] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)


def import_create(
    *,
    project: Project,
    user: User | None,
    file: UploadFile,
    name: str = "",
    tool: str | None = None,
    input_var: str | None = None,
    run_name: str = "",
) -> ImportOutcome:
    """Import `file` as new versions of dataset `name` (default: the file's name) and
    its grades, if it has any, as finished runs of those versions.

    1. Read the file onto disk (datasets.imports: detection, bounds, row problems),
       group by group (promptfoo: one per prompt x provider; otherwise one).
    2. In one durable transaction, per group: a dataset version of its items
       (datasets.services.dataset_create) and, when it has grades, a finished run with
       one scorer per check and a result per grade; then an audit event.
    Raises DatasetUploadError / ApplicationError; nothing is written then.
    """
    run_name = (run_name or "").strip()
    text_check_storable(run_name, field="run_name")
    with import_spill(file=file, tool=tool, input_var=input_var) as spill:
        summary = spill.summary
        options = {
            (label, scorer): _scorer_options(kind, scorer_options)
            for label, group in spill.groups.items()
            for scorer, (kind, scorer_options) in group.scorers.items()
        }
        datasets: list[Dataset] = []
        runs: list[Run] = []
        base = run_name or _run_name(spill)
        many = len(spill.groups) > 1
        with transaction.atomic(durable=True):
            for label, group in spill.groups.items():
                dataset = import_dataset_create(
                    project=project, user=user, spill=spill, group=group, name=name
                )
                datasets.append(dataset)
                if group.scorers:
                    runs.append(
                        _run_create(
                            project=project,
                            user=user,
                            dataset=dataset,
                            spill=spill,
                            group=group,
                            options={s: options[(label, s)] for s in group.scorers},
                            name=(f"{base} · {label}" if many and label else base)[
                                :200
                            ],
                        )
                    )
            who = user.get_username() if user is not None else "someone"
            audit_event(
                project=project,
                actor=user,
                action="import.create",
                summary=(
                    f"{who} imported the {spill.tool} file {spill.filename} as "
                    + ", ".join(str(d) for d in datasets)
                    + (
                        " with run"
                        + ("s" if len(runs) > 1 else "")
                        + " "
                        + ", ".join(f"#{r.pk}" for r in runs)
                        if runs
                        else ""
                    )
                )[:500],
                after={
                    "dataset_ids": [d.pk for d in datasets],
                    "run_ids": [r.pk for r in runs],
                    "summary": summary.as_dict(),
                },
                run=runs[0] if runs else None,
            )
    summary.scorer = (
        ", ".join(dict.fromkeys(s for g in spill.groups.values() for s in g.scorers))
        if runs
        else ""
    )
    return ImportOutcome(
        dataset=datasets[0],
        run=runs[0] if runs else None,
        summary=summary,
        datasets=datasets,
        runs=runs,
    )


def _run_name(spill: ImportSpill) -> str:
    eval_id = spill.summary.details.get("eval_id")
    return (f"{spill.tool} {eval_id}" if eval_id else f"{spill.tool} import")[:150]


def _scorer_options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    try:
        return validate_options(kind, options or {})
    except ScoringError as exc:
        raise DatasetUploadError(
            f"The file's {kind} options cannot be used: {exc}",
            [Problem(str(exc), column="options.factuality")],
        ) from None


def _run_create(
    *,
    project: Project,
    user: User | None,
    dataset: Dataset,
    spill: ImportSpill,
    group: GroupSpill,
    options: dict[str, dict[str, Any]],
    name: str,
) -> Run:
    """A finished run holding one group's grades, in the caller's transaction.

    Not evals.services.run_start: that one owns a durable transaction and queues the
    judging; here the judging happened in the other tool, and its grades are stored
    as judge results (final = judge's) for reviews to override. Each result's score
    and pass are ours from its analysis under its scorer's options, which reproduce
    the tool's (factuality: the test's category scores; imported: the tool's own pass
    and score), so an override recomputes them the same way.
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
    scorers: dict[str, RunScorer] = {}
    for position, (scorer, (kind, _options)) in enumerate(group.scorers.items()):
        scorers[scorer] = RunScorer.objects.create(
            run=run,
            scorer=None,
            name=scorer,
            kind=kind,
            options=options[scorer],
            judge=None,
            # The run page shows this as the judge: the grader the other tool used.
            judge_snapshot={
                "model": (spill.grader if kind == "factuality" else "")
                or f"{spill.tool} grader",
                "imported_from": spill.tool,
            },
            position=position,
        )
    total = errors = 0
    batch: list[tuple[int, str, dict[str, Any] | None, str, str]] = []
    for grade in group.grades():
        batch.append(grade)
        if len(batch) >= BATCH_SIZE:
            errors += _insert_results(run, scorers, dataset, batch, options)
            total += len(batch)
            batch = []
    if batch:
        errors += _insert_results(run, scorers, dataset, batch, options)
        total += len(batch)
    run.total = total
    run.status = Run.Status.DONE_WITH_ERRORS if errors else Run.Status.DONE
    run.save(update_fields=["total", "status"])
    return run


def _insert_results(
    run: Run,
    scorers: dict[str, RunScorer],
    dataset: Dataset,
    batch: list[tuple[int, str, dict[str, Any] | None, str, str]],
    options: dict[str, dict[str, Any]],
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
        run_scorer = scorers[scorer]
        result = Result(
            run=run, item_id=item_ids[index], run_scorer=run_scorer, attempts=1
        )
        if analysis is None:
            result.status = Result.Status.ERROR
            result.error = error or "The tool recorded no grade."
            errors += 1
        else:
            kind, scorer_options = run_scorer.kind, options[scorer]
            score = compute_score(kind, analysis, scorer_options)
            passed = passes(kind, score, scorer_options, analysis=analysis)
            result.status = Result.Status.OK
            result.analysis = result.final_analysis = analysis
            result.overridable_count = overridable_count(kind, analysis)
            result.judge_score = result.final_score = score
            result.judge_passed = result.final_passed = passed
            result.reason = reason
        results.append(result)
    Result.objects.bulk_create(results)
    return errors
