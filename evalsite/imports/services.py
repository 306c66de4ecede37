"""Import another tool's file: dataset versions, and its grades as finished runs (one
per promptfoo prompt x provider, one scorer per check) whose results reviewers override
like any judge's.

Here rather than in evalsite.datasets.readers (which reads the files) because the run
is the evals app's and datasets sits below evals in the app layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from evalsite.accounts.models import Project
from evalsite.accounts.services.audit import audit_event
from evalsite.datasets.models import Dataset
from evalsite.datasets.parsing.limits import Problem
from evalsite.datasets.readers.base import ImportSummary
from evalsite.datasets.readers.services import (
    GroupSpill,
    ImportSpill,
    import_dataset_create,
    import_spill,
)
from evalsite.datasets.services import DatasetUploadError, UploadFile
from evalsite.evals.models import Run
from evalsite.evals.runs.imported import ImportedScorer, imported_run_create
from evalsite.lib.text import text_check_storable
from scoring import (
    ScoringError,
    validate_options,
)


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

    1. Read the file onto disk (datasets.readers: detection, bounds, row problems),
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
    """A finished run holding one group's grades (evals.runs.imported), in
    the caller's transaction."""
    scorers = [
        ImportedScorer(
            name=scorer,
            kind=kind,
            options=options[scorer],
            # The run page shows this as the judge: the grader the other tool used.
            judge_snapshot={
                "model": (spill.grader if kind == "factuality" else "")
                or f"{spill.tool} grader",
                "imported_from": spill.tool,
            },
        )
        for scorer, (kind, _options) in group.scorers.items()
    ]
    return imported_run_create(
        project=project,
        user=user,
        dataset=dataset,
        name=name,
        scorers=scorers,
        grades=group.grades(),
    )
