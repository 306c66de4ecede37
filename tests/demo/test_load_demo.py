from __future__ import annotations

from collections import Counter
from io import StringIO
from statistics import mean

import pytest
from django.core.management import call_command

from evalsite.accounts.models import Project
from evalsite.evals.models import Result, Run
from evalsite.review.models import Override, ReviewQueue

pytestmark = pytest.mark.django_db(transaction=True)


def test_load_demo_builds_a_finished_reviewed_run_once():
    out = StringIO()
    call_command("load_demo", stdout=out)
    call_command("load_demo", stdout=out)  # idempotent: nothing new the second time

    project = Project.objects.get(memberships__user__username="demo")
    assert project.datasets.count() == 1
    dataset = project.datasets.get()
    assert dataset.item_count >= 50
    run = Run.objects.get(project=project)
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
