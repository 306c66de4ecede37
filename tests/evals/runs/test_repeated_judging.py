"""A judge asked k times: every answer kept, the majority as the verdict, the split as
its uncertainty; each answer's calls go through the limiter and are stored."""

from __future__ import annotations

import pytest

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import JudgeCall, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers.services import scorer_create, scorer_update
from scoring import compute_score
from tests.evals.conftest import judge_control, judge_stats, support_rows
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db


def _noisy_run(project, owner, judge, offline_judge, capture, *, repeat, n=12):
    dataset = DatasetFactory(project=project, name="many", rows=support_rows(n))
    scorer = scorer_create(
        project=project,
        user=owner,
        name="F",
        kind="faithfulness",
        judge=judge,
        options={"repeat": repeat, "judge_temperature": 0.7},
    )
    judge_control(offline_judge, noise=0.3)
    before = judge_stats(offline_judge)["chat_completions"]
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[scorer]
        )
    run.refresh_from_db()
    calls = judge_stats(offline_judge)["chat_completions"] - before
    return run, calls


def test_each_answer_is_kept_and_the_majority_decides(
    project, owner, judge, offline_judge, django_capture_on_commit_callbacks
):
    run, calls = _noisy_run(
        project,
        owner,
        judge,
        offline_judge,
        django_capture_on_commit_callbacks,
        repeat=3,
    )
    assert run.status == Run.Status.DONE
    results = list(Result.objects.filter(run=run).order_by("pk"))
    assert len(results) == 12
    disagreements = 0
    for result in results:
        answers = result.judge_answers
        assert len(answers) == 3
        passes = [a["passed"] for a in answers]
        majority = sum(passes) * 2 > len(passes)
        assert result.judge_passed is majority
        assert result.final_passed is majority
        minority = sum(1 for p in passes if p != majority)
        assert result.judge_uncertainty == pytest.approx(minority / 3)
        disagreements += minority > 0
        # The kept analysis is the first majority answer's, and scores as it says.
        first = next(a for a in answers if a["passed"] is majority)
        assert result.judge_score == first["score"]
        options = result.run_scorer.options
        assert compute_score("faithfulness", result.analysis, options) == first["score"]
    # The noise knob made some of the three answers disagree, and not all.
    assert 0 < disagreements < 12
    # Every call of every answer is stored, one JudgeCall per request.
    assert JudgeCall.objects.filter(result__run=run).count() == calls
    per_result = JudgeCall.objects.filter(result=results[0]).count()
    assert per_result >= 3 * 2  # claims + verdicts per answer at least


def test_ties_are_a_fail(
    project, owner, judge, offline_judge, django_capture_on_commit_callbacks
):
    run, _ = _noisy_run(
        project,
        owner,
        judge,
        offline_judge,
        django_capture_on_commit_callbacks,
        repeat=2,
    )
    results = Result.objects.filter(run=run)
    ties = [r for r in results if sum(a["passed"] for a in r.judge_answers) == 1]
    assert ties  # with noise 0.3, some pairs split
    for result in ties:
        assert result.judge_passed is False
        assert result.judge_uncertainty == 0.5


def test_asked_once_keeps_no_answers(
    project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    assert not Result.objects.filter(run=run, judge_answers__isnull=False).exists()
    assert not Result.objects.filter(run=run, judge_uncertainty__isnull=False).exists()


def test_repeat_needs_a_judge_temperature_above_zero(project, owner, judge):
    with pytest.raises(ApplicationError) as info:
        scorer_create(
            project=project,
            user=owner,
            name="F",
            kind="faithfulness",
            judge=judge,
            options={"repeat": 3},
        )
    assert "temperature above 0" in info.value.field_errors["options.repeat"]
    scorer = scorer_create(
        project=project, user=owner, name="F", kind="faithfulness", judge=judge
    )
    with pytest.raises(ApplicationError):
        scorer_update(scorer=scorer, user=owner, options={"repeat": 2})
    scorer.refresh_from_db()
    assert "repeat" not in scorer.options
