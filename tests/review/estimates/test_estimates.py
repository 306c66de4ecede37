from __future__ import annotations

import pytest

from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.verdicts import result_set_human_pass
from evalsite.review.estimates.selectors import (
    Figure,
    figure_sentence,
    run_estimates,
    sample_plan,
    scorer_estimates,
)
from evalsite.review.estimates.services import (
    SampleDesign,
    calibration_sample_create,
)
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.queues.services import queue_create
from tests.review.estimates.builders import biased_run, human_truth
from tests.review.estimates.recount import recount

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return biased_run(project, n_items=200)


def _sample(run, owner, design="uniform", budget=60, seed=0):
    return calibration_sample_create(
        run=run,
        run_scorer=run.run_scorers.get(),
        user=owner,
        spec=SampleDesign(design=design, budget=budget, seed=seed),
    )


def _answer(queue, user, limit=None):
    entries = queue.entries.select_related("result__item").order_by("position")
    for e in list(entries)[:limit]:
        result_set_human_pass(result=e.result, user=user, passed=human_truth(e.result))


def test_estimates_without_a_sample_show_the_judge_and_no_interval(run):
    est = scorer_estimates(run_scorer=run.run_scorers.get())
    assert est.sample is None and est.labels_used == 0
    assert est.pass_rate is not None and est.pass_rate.estimate is None
    assert est.pass_rate.judge == pytest.approx(
        run.results.filter(judge_passed=True).count() / 200
    )
    assert "No labels from a calibration sample" in est.pass_rate.sentence


@pytest.mark.parametrize("design", ["uniform", "active", "stratified"])
def test_estimates_equal_a_recount_from_raw_rows(run, owner, design):
    queue = _sample(run, owner, design=design)
    _answer(queue, owner, limit=30)
    rs = run.run_scorers.get()
    est = scorer_estimates(run_scorer=rs)
    assert est.sample.queue_id == queue.pk and est.labels_used == 30
    for fig, metric in ((est.pass_rate, "pass_rate"), (est.mean, "mean")):
        expected = recount(rs, metric)
        assert fig.estimate == pytest.approx(expected[0], abs=1e-12)
        assert fig.half_width == pytest.approx(expected[1], abs=1e-12)
        assert fig.ci_low <= fig.estimate <= fig.ci_high


def test_estimate_corrects_the_judge_towards_the_human_truth(run, owner):
    queue = _sample(run, owner, budget=120)
    _answer(queue, owner)
    rs = run.run_scorers.get()
    truth = sum(human_truth(r) for r in rs.results.select_related("item")) / 200
    fig = scorer_estimates(run_scorer=rs).pass_rate
    assert fig.judge - truth > 0.15  # the judge overstates
    assert fig.ci_low <= truth <= fig.ci_high
    assert abs(fig.estimate - truth) < abs(fig.judge - truth)
    assert "the judge overstates this pass rate by about" in fig.sentence


def test_labels_from_other_queues_are_counted_but_not_used(run, owner):
    rs = run.run_scorers.get()
    failing = queue_create(
        run=run, user=owner, query=ResultQuery(), source="failing", name="fails"
    )
    _answer(failing, owner, limit=10)
    sample = _sample(run, owner)
    _answer(sample, owner, limit=12)
    est = scorer_estimates(run_scorer=rs)
    reviewed = rs.results.filter(reviewed=True).count()
    # A sampled result reviewed from the failures queue is still a sampled result.
    assert est.labels_used == sample.entries.filter(result__reviewed=True).count()
    assert est.labels_unused == reviewed - est.labels_used
    assert "chance of being reviewed is unknown" in est.unused_reason
    (run_est,) = run_estimates(run_id=run.pk)
    sources = dict(run_est.unused_sources)
    # The failing queue's reviewed results, less those the sample also drew.
    assert sources["fails"] == (
        failing.entries.filter(result__reviewed=True)
        .exclude(result__queue_entries__queue=sample)
        .count()
    )
    assert sum(sources.values()) == est.labels_unused
    again = scorer_estimates(run_scorer=rs)
    assert again.pass_rate.estimate == est.pass_rate.estimate


def test_interval_narrows_as_the_sample_is_answered(run, owner):
    queue = _sample(run, owner, design="active", budget=80)
    rs = run.run_scorers.get()
    _answer(queue, owner, limit=15)
    early = scorer_estimates(run_scorer=rs).pass_rate
    _answer(queue, owner)
    late = scorer_estimates(run_scorer=rs).pass_rate
    assert late.labels > early.labels
    assert late.half_width < early.half_width


def test_run_estimates_stand_beside_the_human_adjusted_figures(run, owner):
    queue = _sample(run, owner)
    _answer(queue, owner, limit=20)
    (agg,) = run_aggregates(run_id=run.pk)
    (est,) = run_estimates(run_id=run.pk)
    assert est.pass_rate.adjusted == agg.final_pass_rate
    assert est.mean.adjusted == agg.final_mean
    assert est.labels_used == 20


def test_sample_plan_asks_for_more_labels_for_a_narrower_interval(run, owner):
    queue = _sample(run, owner, budget=60)
    _answer(queue, owner, limit=30)
    rs = run.run_scorers.get()
    wide = sample_plan(run_scorer=rs, half_width=0.15)
    narrow = sample_plan(run_scorer=rs, half_width=0.08)
    assert wide.basis == "calibration" and wide.labels == 30
    assert narrow.required > wide.required
    assert narrow.detectable == wide.detectable > 0
    assert "more than the 30 there are" in narrow.message


def test_sample_plan_without_labels_says_to_review_first(run):
    plan = sample_plan(run_scorer=run.run_scorers.get(), half_width=0.03)
    assert plan.required is None
    assert plan.message.startswith("Review a few results first")


def test_figure_sentence_in_words_a_lead_can_repeat():
    fig = Figure(
        metric="pass_rate",
        judge=0.82,
        adjusted=0.80,
        estimate=0.76,
        ci_low=0.73,
        ci_high=0.79,
        half_width=0.03,
        labels=200,
        population=10_000,
        human_only=0.75,
        human_only_half_width=0.06,
        effective_labels=540.0,
    )
    assert figure_sentence(fig) == (
        "judge 82 %; corrected 76 % ± 3 % from 200 human labels: the judge "
        "overstates this pass rate by about 6 points; the judge added the "
        "equivalent of 340 labels."
    )
