"""One of every project-scoped object for export, API and security tests, made with the
factories (no services); the objects look like what a finished run leaves behind."""

from __future__ import annotations

from typing import Any

from evalsite.accounts.models import Project
from evalsite.datasets.models import Dataset
from evalsite.evals.models import Result, Run, ScorerConfig
from evalsite.review.models import QueueFlag
from tests.factories import (
    AuditEventFactory,
    CommentFactory,
    DatasetFactory,
    InvitationFactory,
    JudgeCallFactory,
    JudgeConnectionFactory,
    MembershipEventFactory,
    OverrideFactory,
    QueueEntryFactory,
    ResultFactory,
    ReviewQueueFactory,
    RunFactory,
    RunScorerFactory,
    SavedFilterFactory,
    ScorerConfigFactory,
)
from tests.webhooks.builders import build_webhooks

QA_ROWS: list[dict[str, Any]] = [
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
QA_COLUMNS = ["input", "output", "context", "reference", "topic", "difficulty"]
# The two QA rows as an uploaded file leaves them: DatasetFactory(project=..., **QA_DATASET).
QA_DATASET: dict[str, Any] = {"name": "qa", "columns": QA_COLUMNS, "rows": QA_ROWS}


def make_run_with_score(
    project: Project,
    dataset: Dataset,
    scorers: list[ScorerConfig],
    *,
    judge_score: float = 0.75,
    reason: str = "All claims are supported.",
) -> Run:
    """A finished run with an ok result per item × scorer, every one scored
    `judge_score` by the judge and finally (tests/review/builders.make_run computes the
    scores with the scoring library instead)."""
    items = list(dataset.items.order_by("index"))
    run = RunFactory(
        project=project,
        dataset=dataset,
        status=Run.Status.DONE,
        finished_at=None,
        total=len(items) * len(scorers),
    )
    run_scorers = [
        RunScorerFactory(
            run=run,
            scorer=scorer,
            judge_snapshot={"model": "gpt-4o-mini"},
            position=position,
        )
        for position, scorer in enumerate(scorers)
    ]
    analysis = {"claims": ["c"], "verdicts": [{"verdict": "yes", "reason": "ok"}]}
    Result.objects.bulk_create(
        ResultFactory.build(
            run=run,
            item=item,
            run_scorer=run_scorer,
            analysis=analysis,
            final_analysis=analysis,
            judge_score=judge_score,
            final_score=judge_score,
            judge_passed=judge_score >= 0.5,
            final_passed=judge_score >= 0.5,
            reason=reason,
        )
        for item in items
        for run_scorer in run_scorers
    )
    return run


def build_world(project: Project, owner: Any) -> dict[str, Any]:
    """One of every project-scoped object, for walking every URL and API operation."""
    from evalsite.accounts.services import api_token_create

    judge = JudgeConnectionFactory(
        project=project, name="secret-judge", api_key="sk-world-SECRET-KEY-777"
    )
    scorer = ScorerConfigFactory(project=project, judge=judge)
    dataset = DatasetFactory(project=project, **QA_DATASET)
    run = make_run_with_score(project, dataset, [scorer])
    other_run = make_run_with_score(project, dataset, [scorer])
    run_scorer = run.run_scorers.get()
    result = run.results.order_by("item__index").first()
    item = result.item
    call = JudgeCallFactory(
        result=result,
        step="claims",
        messages=[{"role": "user", "content": "extract claims"}],
        raw_response='{"claims": ["c"]}',
        prompt_tokens=10,
        completion_tokens=5,
        latency_ms=12.5,
    )
    override = OverrideFactory(
        result=result,
        kind="verdict",
        path="verdicts.0.verdict",
        old_value="yes",
        new_value="no",
        note="not supported",
        user=owner,
    )
    Result.objects.filter(pk=result.pk).update(overridden=True)
    comment = CommentFactory(result=result, user=owner, body="look again")
    audit = AuditEventFactory(
        project=project,
        run=run,
        result=result,
        actor=owner,
        action="override",
        summary="flipped",
    )
    queue = ReviewQueueFactory(
        project=project, run=run, name="failing", size=1, created_by=owner
    )
    entry = QueueEntryFactory(queue=queue, result=result, position=1)
    flag = QueueFlag.objects.create(
        project=project, queue=queue, entry=entry, reason="unreadable", flagged_by=owner
    )
    pairwise = _pairwise_queue(project, run, other_run, item, owner)
    token, raw = api_token_create(user=owner, name="world")
    saved_filter = SavedFilterFactory(project=project, user=owner)
    invitation = InvitationFactory(project=project, created_by=owner)
    membership_event = MembershipEventFactory(
        project=project, actor=owner, subject=owner, after={"role": "owner"}
    )
    candidate, replay = _lab(project, scorer, owner)
    bias_audit = _bias_audit(project, run, run_scorer, item)
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
        "flag": flag,
        "pairwise": pairwise,
        "token": token,
        "raw_token": raw,
        "saved_filter": saved_filter,
        "invitation": invitation,
        "membership_event": membership_event,
        "candidate": candidate,
        "replay": replay,
        "bias_audit": bias_audit,
        "membership": project.memberships.get(user=owner),
        "reviewer_membership": project.memberships.exclude(user=owner)
        .order_by("id")
        .first()
        or project.memberships.get(user=owner),
        **build_webhooks(project),
    }


def _lab(project: Project, scorer: Any, owner: Any) -> tuple[Any, Any]:
    """A judge lab candidate of `scorer` and a replay of it (no runs)."""
    from evalsite.review.models import LabCandidate, LabReplay

    candidate = LabCandidate.objects.create(
        project=project,
        scorer=scorer,
        name="candidate",
        options=scorer.options,
        created_by=owner,
    )
    replay = LabReplay.objects.create(
        project=project, candidate=candidate, scorer=scorer, created_by=owner
    )
    return candidate, replay


def _bias_audit(project: Project, run: Run, run_scorer: Any, item: Any) -> Any:
    """A finished bias audit of one item, with its hidden run. Made directly: the
    service refuses a judge-less snapshot like the world's."""
    from evalsite.evals.models import BiasAudit, RunScorer

    audit_run = Run.objects.create(
        project=project,
        dataset=run.dataset,
        name="audit",
        status=Run.Status.DONE,
        total=1,
        purpose=Run.Purpose.AUDIT,
    )
    changed = RunScorer.objects.create(
        run=audit_run,
        name=run_scorer.name,
        kind=run_scorer.kind,
        options=run_scorer.options,
        perturbation="padded",
    )
    Result.objects.create(
        run=audit_run,
        item=item,
        run_scorer=changed,
        status=Result.Status.OK,
        judge_passed=True,
    )
    return BiasAudit.objects.create(
        project=project,
        run=run,
        run_scorer=run_scorer,
        audit_run=audit_run,
        sample_size=1,
        seed=0,
        sample=[item.pk],
    )


def _pairwise_queue(
    project: Project, run: Run, other_run: Run, item: Any, owner: Any
) -> Any:
    """A pairwise queue of one pair. Made directly: the service
    refuses runs of one dataset, whose outputs are the same."""
    from evalsite.review.models import PairwiseItem, ReviewQueue

    queue = ReviewQueue.objects.create(
        project=project,
        run=run,
        run_b=other_run,
        kind=ReviewQueue.Kind.PAIRWISE,
        name="pairwise",
        size=1,
        pairing={"match": "input", "seed": 0},
        created_by=owner,
    )
    PairwiseItem.objects.create(
        queue=queue, position=1, item_a=item, item_b=item, a_left=True
    )
    return queue
