from __future__ import annotations

import pytest

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ApplicationError
from evalsite.review.estimates.services import (
    SampleDesign,
    calibration_sample_create,
    judge_uncertainty,
)
from evalsite.review.models import ReviewQueue
from tests.review.estimates.builders import biased_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return biased_run(project, n_items=200)


def _draw(run, owner, **spec):
    rs = run.run_scorers.get()
    return calibration_sample_create(
        run=run, run_scorer=rs, user=owner, spec=SampleDesign(**spec)
    )


def test_judge_uncertainty_is_one_at_the_threshold_and_zero_at_the_far_end():
    got = judge_uncertainty([0.5, 0.0, 0.75, 1.0, None], threshold=0.5, scale=1)
    assert got == [1.0, 0.0, 0.5, 0.0, 1.0]
    # Off-centre threshold: the far end is the farther side.
    assert judge_uncertainty([0.0, 1.0], threshold=0.8, scale=1) == [0.0, 0.75]
    assert judge_uncertainty([0.3], threshold=None, scale=1) == [1.0]


def test_calibration_sample_records_design_seed_and_probabilities(run, owner):
    queue = _draw(run, owner, design="active", budget=50, floor=0.2, seed=7)
    assert queue.source == ReviewQueue.Source.CALIBRATION and queue.is_calibration
    assert queue.design["design"] == "active"
    assert queue.design["seed"] == 7 and queue.design["population"] == 200
    entries = list(queue.entries.all())
    assert len(entries) == queue.size > 0
    assert all(0 < e.inclusion_probability <= 1 for e in entries)
    assert queue.blind
    assert AuditEvent.objects.filter(action="queue.create", run_id=run.pk).exists()


def test_calibration_sample_is_reproducible_from_its_seed(run, owner):
    first = _draw(run, owner, design="uniform", budget=40, seed=3)
    second = _draw(run, owner, design="uniform", budget=40, seed=3)
    third = _draw(run, owner, design="uniform", budget=40, seed=4)
    ids = [
        list(q.entries.order_by("position").values_list("result_id", flat=True))
        for q in (first, second, third)
    ]
    assert ids[0] == ids[1]
    assert ids[0] != ids[2]


def test_active_sample_favours_the_results_at_the_threshold(run, owner):
    queue = _draw(run, owner, design="active", budget=40, floor=0.1, seed=0)
    by_score: dict[float, set[float]] = {}
    for e in queue.entries.select_related("result"):
        by_score.setdefault(e.result.judge_score, set()).add(
            round(e.inclusion_probability, 9)
        )
    assert max(by_score[0.5]) > max(by_score[1.0])
    assert max(by_score[0.5]) > max(by_score[0.0])


def test_stratified_sample_expects_the_same_labels_from_each_verdict(run, owner):
    queue = _draw(run, owner, design="stratified", budget=40, strata="verdict")
    rs = run.run_scorers.get()
    fails = rs.results.filter(judge_passed=False).count()
    passes = rs.results.filter(judge_passed=True).count()
    pi = {
        e.result.judge_passed: e.inclusion_probability
        for e in queue.entries.select_related("result")
    }
    # Expected labels per stratum: N_h × π_h, equal for both (unless capped at 1).
    assert pi[False] * fails == pytest.approx(min(20, fails), rel=1e-9)
    assert pi[True] * passes == pytest.approx(40 - min(20, fails), rel=1e-9)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"design": "lottery"}, "design"),
        ({"budget": 0}, "budget"),
        ({"floor": 0}, "floor"),
        ({"strata": "colour"}, "strata"),
    ],
)
def test_calibration_sample_rejects_a_bad_design(run, owner, spec, field):
    with pytest.raises(ApplicationError) as exc:
        _draw(run, owner, **spec)
    assert field in exc.value.field_errors
    assert not ReviewQueue.objects.exists()


def test_judge_uncertainty_uses_the_judges_own_split_when_it_has_one():
    got = judge_uncertainty(
        [1.0, 1.0, 0.0, 0.5],
        threshold=0.5,
        scale=1,
        splits=[None, 0.0, 0.5, 1 / 3],
    )
    # No split: from the score; a unanimous judge: 0; a tie: 1; 2 of 3: 2/3.
    assert got == pytest.approx([0.0, 0.0, 1.0, 2 / 3])


def test_active_sample_follows_the_split_of_a_judge_asked_several_times(run, owner):
    rs = run.run_scorers.get()
    results = list(rs.results.order_by("pk"))
    # The same score everywhere, so only the splits can tell the results apart.
    tie, unanimous = results[:100], results[100:]
    rs.results.update(judge_score=1.0, judge_passed=True)
    rs.results.filter(pk__in=[r.pk for r in tie]).update(
        judge_uncertainty=0.5,
        judge_answers=[{"score": 1.0, "passed": True}, {"score": 0.0, "passed": False}],
    )
    rs.results.filter(pk__in=[r.pk for r in unanimous]).update(
        judge_uncertainty=0.0,
        judge_answers=[{"score": 1.0, "passed": True}, {"score": 1.0, "passed": True}],
    )
    queue = _draw(run, owner, design="active", budget=40, floor=0.2, seed=0)
    pi = {e.result_id: e.inclusion_probability for e in queue.entries.all()}
    tied = {round(p, 9) for rid, p in pi.items() if rid in {r.pk for r in tie}}
    sure = {round(p, 9) for rid, p in pi.items() if rid not in {r.pk for r in tie}}
    # u = 1 for a tie, 0 when unanimous; mean u = 0.5; π ∝ 0.8 · u / 0.5 + 0.2:
    # 1.8 against 0.2, scaled to a budget of 40 over 200 results.
    assert tied == {round(40 * 1.8 / (100 * 1.8 + 100 * 0.2), 9)}
    assert sure == {round(40 * 0.2 / (100 * 1.8 + 100 * 0.2), 9)}
