"""Human-labelled results for the judge lab's tests, built from rows (no judge)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from evalsite.evals.models import Result
from tests.factories import (
    DatasetFactory,
    ItemFactory,
    JudgeConnectionFactory,
    ResultFactory,
    RunFactory,
    RunScorerFactory,
    ScorerConfigFactory,
)


def labelled_scorer(project, *, kind: str = "faithfulness"):
    judge = JudgeConnectionFactory(project=project)
    return ScorerConfigFactory(project=project, kind=kind, judge=judge)


def labelled_run(project, scorer, verdicts, *, reviewer=None, purpose: str = "run"):
    """A done run of `scorer` with one result per (judge_passed, human_passed) pair;
    human None leaves the result unreviewed. Returns (run, results)."""
    dataset = DatasetFactory(project=project)
    run = RunFactory(project=project, dataset=dataset, purpose=purpose)
    rs = RunScorerFactory(run=run, scorer=scorer)
    now = timezone.now()
    results = []
    for i, (judge, human) in enumerate(verdicts):
        item = ItemFactory(
            dataset=dataset, index=i, input=f"question {i}", output=f"answer {i} text"
        )
        results.append(
            ResultFactory(
                run=run,
                run_scorer=rs,
                item=item,
                status=Result.Status.OK,
                judge_passed=judge,
                judge_score=1.0 if judge else 0.0,
                final_passed=judge if human is None else human,
                reviewed=human is not None,
                reviewed_by=reviewer if human is not None else None,
                reviewed_at=now - timedelta(minutes=len(verdicts) - i)
                if human is not None
                else None,
            )
        )
    return run, results


# A real judge, made imperfect ----------------------------------------------------

ROWS = 30


def judge_control(server, **knobs) -> None:
    """Reset the offline judge, then set its knobs (yes_bias, example_sensitivity ...)."""
    import httpx

    root = server.base_url.removesuffix("/v1")
    httpx.post(f"{root}/_reset", timeout=5).raise_for_status()
    httpx.post(f"{root}/_control", json=knobs, timeout=5).raise_for_status()


def offline_judge(project, server):
    from evalsite.evals.judges.services import judge_create_offline

    judge = judge_create_offline(project)
    judge.base_url = server.base_url
    judge.save(update_fields=["base_url"])
    return judge


def judged_run(project, user, dataset, scorer, capture=None):
    """A run started through the run service and finished eagerly: under
    `capture` (pytest-django's on-commit capture) in a transactional test case, at
    commit in a transaction=True one."""
    import contextlib

    from evalsite.evals.models import Run
    from evalsite.evals.runs import services as run_services

    with capture(execute=True) if capture else contextlib.nullcontext():
        run = run_services.run_start(
            project=project, user=user, dataset=dataset, scorers=[scorer]
        )
    run.refresh_from_db()
    assert run.status == Run.Status.DONE, run.status
    return run


def honest_verdicts(server, capture=None) -> dict[int, bool]:
    """What the honest heuristics answer on support_rows(ROWS), item index → pass,
    judged in another project (the judge cache is per project)."""
    from evalsite.evals.scorers import services as scorer_services
    from tests.evals.conftest import support_rows
    from tests.factories import ProjectFactory

    judge_control(server, yes_bias=0.0, example_sensitivity=0.0)
    other = ProjectFactory()
    judge = offline_judge(other, server)
    dataset = DatasetFactory(project=other, rows=support_rows(ROWS))
    scorer = scorer_services.scorer_create(
        project=other, user=None, name="F", kind="faithfulness", judge=judge
    )
    run = judged_run(other, None, dataset, scorer, capture)
    return {
        r.item.index: bool(r.judge_passed)
        for r in Result.objects.filter(run=run).select_related("item")
    }


def biased_labelled_world(project, owner, reviewer, server, capture=None):
    """A judge biased to "yes" (yes_bias 1) that few-shot examples cure
    (example_sensitivity 1), a run of it where it passes everything, and the
    reviewer's labels: the honest verdicts, with a note on every correction."""
    from evalsite.evals.results.verdicts import result_set_human_pass
    from evalsite.evals.scorers import services as scorer_services
    from tests.evals.conftest import support_rows

    honest = honest_verdicts(server, capture)
    assert 4 < sum(not v for v in honest.values()) < ROWS  # both verdicts present
    judge_control(server, yes_bias=1.0, example_sensitivity=1.0)
    judge = offline_judge(project, server)
    dataset = DatasetFactory(project=project, rows=support_rows(ROWS))
    scorer = scorer_services.scorer_create(
        project=project,
        user=owner,
        name="Faithfulness",
        kind="faithfulness",
        judge=judge,
    )
    run = judged_run(project, owner, dataset, scorer, capture)
    results = list(Result.objects.filter(run=run).select_related("item"))
    assert all(r.judge_passed for r in results)  # the biased judge passes everything
    for r in results:
        human = honest[r.item.index]
        result_set_human_pass(
            result=r,
            user=reviewer,
            passed=human,
            note="" if human else f"claim {r.item.index} contradicts the context",
        )
    scorer.project = project
    return {"scorer": scorer, "run": run, "honest": honest, "dataset": dataset}
