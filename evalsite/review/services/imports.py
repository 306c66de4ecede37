"""Import another tool's file: a dataset, and its judge verdicts as a finished run whose
results reviewers override like any judge's.

Here rather than in evalsite.datasets.imports (which reads the files) because the run
is the evals app's and datasets sits below evals in the app layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evalsite.accounts.models import Project
from evalsite.datasets.imports.base import ImportSummary
from evalsite.datasets.imports.services import (
    ImportSpill,
    import_dataset_create,
    import_spill,
)
from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.parsing import Problem
from evalsite.datasets.services import DatasetUploadError, UploadFile
from evalsite.evals.models import Result, Run, RunScorer
from evalsite.lib.text import text_check_storable
from evalsite.review.services.audit import audit_record
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
    """Import `file` as a new version of dataset `name` (default: the file's name) and
    its factuality verdicts, if it has any, as a finished run of that version.

    1. Read the file onto disk (datasets.imports: detection, bounds, row problems).
    2. In one durable transaction: the dataset (datasets.services.dataset_create), the
       run with one factuality scorer and a result per verdict, and an audit event.
    Raises DatasetUploadError / ApplicationError; nothing is written then.
    """
    run_name = (run_name or "").strip()
    text_check_storable(run_name, field="run_name")
    with import_spill(file=file, tool=tool, input_var=input_var) as spill:
        summary = spill.summary
        options = _scorer_options(spill) if summary.verdict_total else None
        with transaction.atomic(durable=True):
            dataset = import_dataset_create(
                project=project, user=user, spill=spill, name=name
            )
            run = None
            if options is not None:
                run = _run_create(
                    project=project,
                    user=user,
                    dataset=dataset,
                    spill=spill,
                    options=options,
                    name=run_name or _run_name(spill),
                )
            who = user.get_username() if user is not None else "someone"
            audit_record(
                project=project,
                actor=user,
                action="import.create",
                summary=(
                    f"{who} imported the {spill.tool} file {spill.filename} as "
                    f"{dataset}" + (f" with run #{run.pk}" if run else "")
                ),
                after={
                    "dataset_id": dataset.pk,
                    "run_id": run.pk if run else None,
                    "summary": summary.as_dict(),
                },
                run=run,
            )
    summary.scorer = spill.scorer_name if run else ""
    return ImportOutcome(dataset=dataset, run=run, summary=summary)


def _run_name(spill: ImportSpill) -> str:
    eval_id = spill.summary.details.get("eval_id")
    return (f"{spill.tool} {eval_id}" if eval_id else f"{spill.tool} import")[:200]


def _scorer_options(spill: ImportSpill) -> dict[str, Any]:
    try:
        return validate_options("factuality", spill.scorer_options or {})
    except ScoringError as exc:
        raise DatasetUploadError(
            f"The file's factuality category scores cannot be used: {exc}",
            [Problem(str(exc), column="options.factuality")],
        ) from None


def _run_create(
    *,
    project: Project,
    user: User | None,
    dataset: Dataset,
    spill: ImportSpill,
    options: dict[str, Any],
    name: str,
) -> Run:
    """A finished run holding the imported verdicts, in the caller's transaction.

    Not evals.services.run_start: that one owns a durable transaction and queues the
    judging; here the judging happened in the other tool, and its verdicts are stored
    as judge results (final = judge's) for reviews to override. The score is ours from
    the analysis under `options`, which reproduce the tool's category scores, so an
    override recomputes it the same way.
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
    run_scorer = RunScorer.objects.create(
        run=run,
        scorer=None,
        name=spill.scorer_name,
        kind="factuality",
        options=options,
        judge=None,
        # The run page shows this as the judge: the grader the other tool used.
        judge_snapshot={
            "model": spill.grader or f"{spill.tool} grader",
            "imported_from": spill.tool,
        },
        position=0,
    )
    total = errors = 0
    batch: list[tuple[int, dict[str, Any] | None, str, str]] = []
    for verdict in spill.verdicts():
        batch.append(verdict)
        if len(batch) >= BATCH_SIZE:
            errors += _insert_results(run, run_scorer, dataset, batch, options)
            total += len(batch)
            batch = []
    if batch:
        errors += _insert_results(run, run_scorer, dataset, batch, options)
        total += len(batch)
    run.total = total
    run.status = Run.Status.DONE_WITH_ERRORS if errors else Run.Status.DONE
    run.save(update_fields=["total", "status"])
    return run


def _insert_results(
    run: Run,
    run_scorer: RunScorer,
    dataset: Dataset,
    batch: list[tuple[int, dict[str, Any] | None, str, str]],
    options: dict[str, Any],
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
    for index, analysis, reason, error in batch:
        result = Result(
            run=run, item_id=item_ids[index], run_scorer=run_scorer, attempts=1
        )
        if analysis is None:
            result.status = Result.Status.ERROR
            result.error = error or "The tool recorded no verdict."
            errors += 1
        else:
            score = compute_score("factuality", analysis, options)
            passed = passes("factuality", score, options)
            result.status = Result.Status.OK
            result.analysis = result.final_analysis = analysis
            result.overridable_count = overridable_count("factuality", analysis)
            result.judge_score = result.final_score = score
            result.judge_passed = result.final_passed = passed
            result.reason = reason
        results.append(result)
    Result.objects.bulk_create(results)
    return errors
