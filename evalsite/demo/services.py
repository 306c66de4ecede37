"""The demo: B's dataset, six scorers on the offline judge, a finished run and a first
pass of reviews; and a support agent's tool calls, scored by the code scorers of tool
calls in a run of their own.

`make run` loads it before any worker is up, so the runs are judged here, in-process,
by the evals dispatcher (as a worker would judge them), against a private offline
judge server on a free port (never through the broker).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from django.contrib.auth.models import User

from evalsite.accounts.models import Membership, Project, Role
from evalsite.datasets.services import dataset_create_from_path
from evalsite.evals.engine.dispatch import run_dispatch_here
from evalsite.evals.judges.services import judge_create_offline
from evalsite.evals.models import Result, Run, ScorerConfig
from evalsite.evals.results.verdicts import override_create, result_accept
from evalsite.evals.runs.services import run_start
from evalsite.evals.scorers.services import scorer_create
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import FinalRule, QueueEntry
from evalsite.review.queues.services import queue_create
from evalsite.review.team.services import review_answer
from scoring.offline_judge import start_server

DEMO_DATA = (
    Path(__file__).resolve().parent.parent
    / "datasets"
    / "demo_data"
    / "support_rag.jsonl"
)
DEMO_DATASET_NAME = "Support bot RAG (demo)"
DEMO_SCORERS: list[tuple[str, str, dict[str, Any]]] = [
    ("Faithfulness", "faithfulness", {}),
    ("Hallucination", "hallucination", {}),
    ("Context relevance", "context_relevance", {}),
    ("Factuality", "factuality", {}),
    ("Answer relevancy", "answer_relevancy", {}),
    ("Content similarity", "content_similarity", {}),
]
DEMO_AGENT_DATA = DEMO_DATA.with_name("support_agent.jsonl")
DEMO_AGENT_DATASET_NAME = "Support agent tool calls (demo)"
DEMO_AGENT_RUN_NAME = "Agent demo run (tool calls)"
DEMO_AGENT_SCORERS: list[tuple[str, str, dict[str, Any]]] = [
    ("Tool call accuracy", "tool_call_accuracy", {}),
    ("Trajectory accuracy", "trajectory_accuracy", {"ordering": "relaxed"}),
]


class _Writer(Protocol):
    """sys.stdout, a StringIO or a management command's self.stdout."""

    def write(self, text: str, /) -> object: ...


def _say(stdout: _Writer | None, text: str) -> None:
    if stdout is not None:
        stdout.write(text)


def demo_load(
    *,
    project: Project,
    user: User,
    with_run: bool = True,
    stdout: _Writer | None = None,
) -> None:
    """Idempotent: creates only what the project lacks.

    1. The offline judge connection (normally made with the project).
    2. The demo dataset, when the project has no dataset.
    3. The six demo scorers (matched by name).
    4. With `with_run` and no finished run yet: a run of all six, judged to completion
       here by the dispatcher against a private offline judge.
    5. The agent dataset, its two scorers and (with `with_run`) their run.
    """
    judge = judge_create_offline(project)
    dataset = (
        project.datasets.exclude(name=DEMO_AGENT_DATASET_NAME)
        .order_by("created_at", "pk")
        .first()
    )
    if dataset is None:
        dataset = dataset_create_from_path(
            project=project, user=user, path=DEMO_DATA, name=DEMO_DATASET_NAME
        )
        _say(stdout, f"demo dataset: {dataset.item_count} items")
    scorers = []
    for name, kind, options in DEMO_SCORERS:
        scorer = ScorerConfig.objects.filter(
            project=project, name=name, archived=False
        ).first()
        if scorer is None:
            scorer = scorer_create(
                project=project,
                user=user,
                name=name,
                kind=kind,
                judge=judge,
                options=options,
            )
        scorers.append(scorer)
    finished = Run.objects.filter(
        project=project, status__in=(Run.Status.DONE, Run.Status.DONE_WITH_ERRORS)
    ).exclude(name=DEMO_AGENT_RUN_NAME)
    if not with_run or finished.exists():
        _demo_agent(project=project, user=user, with_run=with_run, stdout=stdout)
        return
    started = time.monotonic()
    run = run_start(
        project=project,
        user=user,
        dataset=dataset,
        scorers=scorers,
        name="Demo run (offline heuristic judge)",
        enqueue=False,
    )
    server = start_server(port=0)
    try:
        run_dispatch_here(run_id=run.pk, base_url=server.base_url)
    finally:
        server.stop()
    run.refresh_from_db()
    _say(
        stdout,
        f"demo run #{run.pk}: {run.get_status_display()}, {run.total} results "
        f"in {time.monotonic() - started:.1f} s",
    )
    reviewed = _demo_reviews(run=run, user=user)
    _say(stdout, f"demo reviews: {reviewed} faithfulness results reviewed by 'demo'")
    queues = _demo_team_review(run=run, user=user)
    _say(stdout, f"demo team review: {queues}")
    _demo_agent(project=project, user=user, with_run=with_run, stdout=stdout)


def _demo_agent(
    *, project: Project, user: User, with_run: bool, stdout: _Writer | None
) -> None:
    """The agent dataset (support_agent.jsonl), its tool-call scorers and a finished
    run of them: code scorers, computed here without a judge. Idempotent."""
    dataset = project.datasets.filter(name=DEMO_AGENT_DATASET_NAME).first()
    if dataset is None:
        dataset = dataset_create_from_path(
            project=project,
            user=user,
            path=DEMO_AGENT_DATA,
            name=DEMO_AGENT_DATASET_NAME,
        )
        _say(stdout, f"demo agent dataset: {dataset.item_count} items")
    scorers = []
    for name, kind, options in DEMO_AGENT_SCORERS:
        scorer = ScorerConfig.objects.filter(
            project=project, name=name, archived=False
        ).first()
        if scorer is None:
            scorer = scorer_create(
                project=project, user=user, name=name, kind=kind, options=options
            )
        scorers.append(scorer)
    if (
        not with_run
        or Run.objects.filter(project=project, name=DEMO_AGENT_RUN_NAME)
        .exclude(status__in=(Run.Status.CANCELLED, Run.Status.FAILED))
        .exists()
    ):
        return
    run = run_start(
        project=project,
        user=user,
        dataset=dataset,
        scorers=scorers,
        name=DEMO_AGENT_RUN_NAME,
        enqueue=False,
    )
    run_dispatch_here(run_id=run.pk)
    run.refresh_from_db()
    _say(stdout, f"demo agent run #{run.pk}: {run.get_status_display()}")


def _demo_reviews(*, run: Run, user: User) -> int:
    """A reviewer's first pass over the faithfulness results, so the judge-vs-human
    numbers (final vs judge mean, agreement, kappa) have something to show: the first
    faithful-looking ones accepted, and on a few others the first verdict the judge did
    not call supported flipped to supported."""
    results = list(
        Result.objects.filter(
            run=run, run_scorer__kind="faithfulness", status=Result.Status.OK
        )
        .select_related("run__project", "run_scorer", "item")
        .order_by("item__index")[:12]
    )
    for result in results:
        verdicts = (result.analysis or {}).get("verdicts", [])
        doubtful = [i for i, v in enumerate(verdicts) if v.get("verdict") != "yes"]
        if doubtful and result.item.index % 3 == 0:
            override_create(
                result=result,
                user=user,
                kind="verdict",
                path=f"verdicts.{doubtful[0]}.verdict",
                value="yes",
                note="Supported by the context once the paraphrase is read in full.",
            )
        else:
            result_accept(result=result, user=user)
    return len(results)


def _demo_team_review(*, run: Run, user: User) -> str:
    """Two colleagues (alex and sam, who cannot log in) so the team pages have
    something to show: a hallucination queue they both answered, blind, with two
    disagreements waiting for adjudication; and an answer-relevancy queue alex has
    answered, where the demo user's own blind answers complete each result."""
    colleagues = []
    for name in ("alex", "sam"):
        colleague = User.objects.filter(username=name).first()
        if colleague is None:
            colleague = User.objects.create_user(username=name, password=None)
        Membership.objects.get_or_create(
            project=run.project, user=colleague, defaults={"role": Role.REVIEWER}
        )
        colleagues.append(colleague)
    alex, sam = colleagues

    def first(kind: str, n: int) -> list[int]:
        return list(
            Result.objects.filter(
                run=run, run_scorer__kind=kind, status=Result.Status.OK
            )
            .order_by("item__index")
            .values_list("pk", flat=True)[:n]
        )

    both = queue_create(
        run=run,
        user=user,
        query=ResultQuery(sort="item"),
        result_ids=first("hallucination", 10),
        name="Team review: hallucination, 2 reviewers",
        overlap=2,
        final_rule=FinalRule.UNANIMOUS,
        blind=True,
    )
    for entry in QueueEntry.objects.filter(queue=both).select_related("result"):
        judged = bool(entry.result.judge_passed)
        review_answer(queue=both, result=entry.result, user=alex, passed=judged)
        # sam reads items 3 and 7 differently: those two go to adjudication.
        sam_says = (not judged) if entry.position in (3, 7) else judged
        review_answer(queue=both, result=entry.result, user=sam, passed=sam_says)
    yours = queue_create(
        run=run,
        user=user,
        query=ResultQuery(sort="item"),
        result_ids=first("answer_relevancy", 6),
        name="Your turn: answer relevancy, 2 reviewers",
        overlap=2,
        final_rule=FinalRule.MAJORITY,
        blind=True,
    )
    for entry in QueueEntry.objects.filter(queue=yours).select_related("result"):
        review_answer(
            queue=yours,
            result=entry.result,
            user=alex,
            passed=bool(entry.result.judge_passed),
        )
    return (
        f"queue “{both.name}” answered by alex and sam (2 for adjudication), "
        f"queue “{yours.name}” waiting for your answers"
    )
