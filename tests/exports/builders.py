"""ORM builders for export, API and security tests: one of each object, no services.

Direct model creation keeps these tests independent of the services other helpers are
still writing; the objects look like what a finished run leaves behind.
"""

from __future__ import annotations

from typing import Any

from evalsite.accounts.models import Project
from evalsite.datasets.models import Dataset, Item
from evalsite.evals.crypto import secret_encrypt
from evalsite.evals.models import JudgeConnection, Result, Run, RunScorer, ScorerConfig


def make_dataset(
    project: Project,
    rows: list[dict[str, Any]] | None = None,
    *,
    name: str = "qa",
    columns: list[str] | None = None,
) -> Dataset:
    rows = (
        rows
        if rows is not None
        else [
            {
                "input": "What is the capital of France?",
                "output": "Paris is the capital of France.",
                "context": ["Paris is the capital and largest city of France."],
                "reference": "Paris",
                "metadata": {"topic": "geo", "difficulty": 1},
            },
            {
                "input": "Who wrote Hamlet?",
                "output": "Hamlet was written by Christopher Marlowe.",
                "context": ["Hamlet is a tragedy written by William Shakespeare."],
                "reference": "William Shakespeare",
                "metadata": {"topic": "lit"},
            },
        ]
    )
    version = Dataset.objects.filter(project=project, name=name).count() + 1
    dataset = Dataset.objects.create(
        project=project,
        name=name,
        version=version,
        file_format=Dataset.Format.JSONL,
        columns=columns
        or ["input", "output", "context", "reference", "topic", "difficulty"],
        item_count=len(rows),
    )
    Item.objects.bulk_create(
        Item(
            dataset=dataset,
            index=i,
            input=row.get("input", ""),
            output=row.get("output", ""),
            context=row.get("context", []),
            reference=row.get("reference", ""),
            metadata=row.get("metadata", {}),
        )
        for i, row in enumerate(rows)
    )
    return dataset


def make_judge(
    project: Project, *, name: str = "gpt", api_key: str = "", api_key_env: str = ""
) -> JudgeConnection:
    return JudgeConnection.objects.create(
        project=project,
        name=name,
        base_url="http://127.0.0.1:9/v1",
        model="gpt-4o-mini",
        api_key_encrypted=secret_encrypt(api_key) if api_key else "",
        api_key_env=api_key_env,
    )


def make_scorer(
    project: Project,
    judge: JudgeConnection | None = None,
    *,
    name: str = "Faithfulness",
    kind: str = "faithfulness",
) -> ScorerConfig:
    return ScorerConfig.objects.create(
        project=project,
        name=name,
        kind=kind,
        judge=judge,
        options={"scale": 1, "threshold": 0.5},
    )


def make_run(
    project: Project,
    dataset: Dataset,
    scorers: list[ScorerConfig],
    *,
    judge_score: float = 0.75,
    reason: str = "All claims are supported.",
) -> Run:
    """A finished run: an ok result per item × scorer with judge = final scores."""
    items = list(dataset.items.order_by("index"))
    run = Run.objects.create(
        project=project,
        dataset=dataset,
        status=Run.Status.DONE,
        total=len(items) * len(scorers),
    )
    run_scorers = [
        RunScorer.objects.create(
            run=run,
            scorer=scorer,
            name=scorer.name,
            kind=scorer.kind,
            options=scorer.options,
            judge=scorer.judge,
            judge_snapshot={"model": "gpt-4o-mini"},
            position=pos,
        )
        for pos, scorer in enumerate(scorers)
    ]
    analysis = {"claims": ["c"], "verdicts": [{"verdict": "yes", "reason": "ok"}]}
    Result.objects.bulk_create(
        Result(
            run=run,
            item=item,
            run_scorer=rs,
            status=Result.Status.OK,
            analysis=analysis,
            final_analysis=analysis,
            judge_score=judge_score,
            final_score=judge_score,
            judge_passed=judge_score >= 0.5,
            final_passed=judge_score >= 0.5,
            reason=reason,
        )
        for item in items
        for rs in run_scorers
    )
    return run
