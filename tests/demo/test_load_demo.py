from __future__ import annotations

from collections import Counter
from io import StringIO
from statistics import mean

import pytest
from django.core.management import call_command

from evalsite.accounts.models import Project
from evalsite.demo.services import (
    DEMO_AGENT_DATASET_NAME,
    DEMO_AGENT_RUN_NAME,
    DEMO_DATASET_NAME,
)
from evalsite.evals.models import Override, Result, Run
from evalsite.review.models import ReviewQueue

pytestmark = pytest.mark.django_db(transaction=True)


def test_load_demo_builds_a_finished_reviewed_run_once():
    out = StringIO()
    call_command("load_demo", stdout=out)
    call_command("load_demo", stdout=out)  # idempotent: nothing new the second time

    project = Project.objects.get(memberships__user__username="demo")
    assert project.datasets.count() == 2  # the RAG dataset and the agent's
    dataset = project.datasets.get(name=DEMO_DATASET_NAME)
    assert dataset.item_count >= 50
    run = Run.objects.exclude(name=DEMO_AGENT_RUN_NAME).get(project=project)
    assert run.status == Run.Status.DONE
    scorer_count = run.run_scorers.count()
    assert scorer_count >= 5
    assert (
        Result.objects.filter(run=run, status=Result.Status.OK).count()
        == dataset.item_count * scorer_count
    )
    assert Result.objects.filter(run=run, reviewed=True).exists()
    assert Override.objects.filter(result__run=run).exists()
    assert "login demo / demo" in out.getvalue()

    # The offline judge tells the demo's faithful answers from the contradicting ones.
    def faithfulness_mean(case_type):
        return mean(
            r.judge_score
            for r in Result.objects.filter(
                run=run, run_scorer__kind="faithfulness"
            ).select_related("item")
            if r.item.metadata.get("case_type") == case_type
        )

    assert faithfulness_mean("faithful") >= 0.8
    assert faithfulness_mean("contradiction") <= 0.3

    # Team review: one queue both colleagues answered (two results to adjudicate),
    # one where the demo user's blind answers are still to come.
    team = ReviewQueue.objects.get(project=project, name__startswith="Team review")
    states = Counter(team.entries.values_list("state", flat=True))
    assert states == {"decided": 8, "adjudicate": 2}
    yours = ReviewQueue.objects.get(project=project, name__startswith="Your turn")
    assert yours.overlap == 2
    assert set(yours.entries.values_list("state", "answers")) == {("open", 1)}


def test_load_demo_scores_the_agent_dataset_by_its_tool_calls():
    call_command("load_demo", stdout=StringIO())
    call_command("load_demo", stdout=StringIO())  # idempotent

    project = Project.objects.get(memberships__user__username="demo")
    dataset = project.datasets.get(name=DEMO_AGENT_DATASET_NAME)
    assert dataset.item_count == 10
    item = dataset.items.get(index=0)
    assert item.system_prompt and item.conversation and item.tool_calls
    run = Run.objects.get(project=project, name=DEMO_AGENT_RUN_NAME)
    assert run.status == Run.Status.DONE
    scores: dict[tuple[str, str], list[float]] = {}
    for kind, case_type, score in Result.objects.filter(run=run).values_list(
        "run_scorer__kind", "item__metadata__case_type", "judge_score"
    ):
        scores.setdefault((kind, case_type), []).append(score)
    # The correct runs score 1 on both; the faulty ones below 1 on trajectory accuracy.
    assert set(scores["tool_call_accuracy", "correct"]) == {1.0}
    assert set(scores["trajectory_accuracy", "correct"]) == {1.0}
    for case_type in ("wrong_order", "missing_tool", "wrong_arguments"):
        assert max(scores["trajectory_accuracy", case_type]) < 1, case_type
    assert set(scores["tool_call_accuracy", "missing_tool"]) == {0.0}
