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
        api_key_url="http://127.0.0.1:9/v1" if api_key or api_key_env else "",
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


def build_world(project: Project, owner: Any) -> dict[str, Any]:
    """One of every project-scoped object, for walking every URL and API operation."""
    from evalsite.accounts.services import api_token_create
    from evalsite.evals.models import JudgeCall
    from evalsite.review.models import (
        AuditEvent,
        Comment,
        Override,
        QueueEntry,
        ReviewQueue,
    )

    judge = make_judge(project, name="secret-judge", api_key="sk-world-SECRET-KEY-777")
    scorer = make_scorer(project, judge)
    dataset = make_dataset(project)
    run = make_run(project, dataset, [scorer])
    other_run = make_run(project, dataset, [scorer])
    run_scorer = run.run_scorers.get()
    result = run.results.order_by("item__index").first()
    item = result.item
    call = JudgeCall.objects.create(
        result=result,
        step="claims",
        messages=[{"role": "user", "content": "extract claims"}],
        raw_response='{"claims": ["c"]}',
        prompt_tokens=10,
        completion_tokens=5,
        latency_ms=12.5,
    )
    override = Override.objects.create(
        result=result,
        kind="verdict",
        path="verdicts.0.verdict",
        old_value="yes",
        new_value="no",
        note="not supported",
        user=owner,
    )
    Result.objects.filter(pk=result.pk).update(overridden=True)
    comment = Comment.objects.create(result=result, user=owner, body="look again")
    audit = AuditEvent.objects.create(
        project=project,
        run=run,
        result=result,
        actor=owner,
        action="override",
        summary="flipped",
    )
    queue = ReviewQueue.objects.create(
        project=project, run=run, name="failing", size=1, created_by=owner
    )
    entry = QueueEntry.objects.create(queue=queue, result=result, position=1)
    token, raw = api_token_create(user=owner, name="world")
    return {
        "project": project,
        "judge": judge,
        "scorer": scorer,
        "dataset": dataset,
        "item": item,
        "run": run,
        "other_run": other_run,
        "run_scorer": run_scorer,
        "result": result,
        "call": call,
        "override": override,
        "comment": comment,
        "audit": audit,
        "queue": queue,
        "entry": entry,
        "token": token,
        "raw_token": raw,
        "membership": project.memberships.get(user=owner),
        "reviewer_membership": project.memberships.exclude(user=owner)
        .order_by("id")
        .first()
        or project.memberships.get(user=owner),
    }
