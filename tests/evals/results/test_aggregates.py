"""Run aggregates against hand-computed numbers: means, pass rates, kappa, histograms."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from evalsite.evals.models import Result
from evalsite.evals.results.aggregates import (
    aggregate_rows,
    cohen_kappa,
    run_aggregates,
)
from evalsite.evals.results.verdicts import override_create, result_accept
from tests.review.builders import judged_claims, make_run


class TestKappa:
    def test_textbook_example(self):
        # po = 35/50 = 0.7; pe = (25·30 + 25·20) / 2500 = 0.5; κ = 0.2 / 0.5 = 0.4
        accuracy, kappa = cohen_kappa(
            true_positive=20, false_positive=5, false_negative=10, true_negative=15
        )
        assert accuracy == pytest.approx(0.7)
        assert kappa == pytest.approx(0.4)

    def test_perfect_agreement_on_both_classes_is_one(self):
        assert cohen_kappa(
            true_positive=3, false_positive=0, false_negative=0, true_negative=2
        ) == (1.0, 1.0)

    def test_all_agree_on_one_class_is_defined_as_one(self):
        # pe = 1 makes the formula 0/0; we define κ = 1.0 for perfect agreement.
        assert cohen_kappa(
            true_positive=4, false_positive=0, false_negative=0, true_negative=0
        ) == (1.0, 1.0)
        assert cohen_kappa(
            true_positive=0, false_positive=0, false_negative=0, true_negative=7
        ) == (1.0, 1.0)

    def test_opposite_single_classes_is_zero(self):
        # judge always pass, human always fail: po = 0, pe = 0 → κ = 0
        assert cohen_kappa(
            true_positive=0, false_positive=4, false_negative=0, true_negative=0
        ) == (0.0, 0.0)

    def test_worse_than_chance_is_negative(self):
        # po = 0.4, pe = (3·2 + 2·3)/25 = 0.48 → κ = -0.08/0.52
        accuracy, kappa = cohen_kappa(
            true_positive=1, false_positive=2, false_negative=1, true_negative=1
        )
        assert accuracy == pytest.approx(0.4)
        assert kappa == pytest.approx(-0.08 / 0.52)

    def test_no_pairs(self):
        assert cohen_kappa(
            true_positive=0, false_positive=0, false_negative=0, true_negative=0
        ) == (None, None)


@pytest.fixture
def reviewed_run(project, reviewer):
    """5 ok faithfulness results (judge 1.0, 0.5, 0.0, 0.67, 0.33) and 3 errors, then:
    r0 accepted (tp), r1 and r3 overridden to fail (fp), r2 accepted (tn),
    r4 verdict 0 flipped no → yes: [yes, no, yes] = 0.67, pass (fn)."""
    analyses = [
        judged_claims("yes", "yes"),
        judged_claims("yes", "no"),
        judged_claims("no", "no"),
        judged_claims("yes", "yes", "no"),
        judged_claims("no", "no", "yes"),
        judged_claims("yes"),
        judged_claims("yes"),
        judged_claims("yes"),
    ]
    run = make_run(
        project, kinds=["faithfulness"], n_items=8, analyses={"faithfulness": analyses}
    )
    results = list(Result.objects.filter(run=run).order_by("item__index"))
    for r, msg in zip(results[5:], ["bad json", "bad json", "timeout"], strict=True):
        Result.objects.filter(pk=r.pk).update(status=Result.Status.ERROR, error=msg)
    r0, r1, r2, r3, r4 = results[:5]
    result_accept(result=r0, user=reviewer)
    override_create(result=r1, user=reviewer, kind="pass", value=False)
    override_create(result=r3, user=reviewer, kind="pass", value=False)
    result_accept(result=r2, user=reviewer)
    override_create(
        result=r4, user=reviewer, kind="verdict", path="verdicts.0.verdict", value="yes"
    )
    return run


@pytest.mark.django_db
def test_aggregates_match_hand_computed_values(reviewed_run):
    (agg,) = run_aggregates(run_id=reviewed_run.pk)
    assert (agg.total, agg.ok, agg.errors, agg.pending) == (8, 5, 3, 0)
    assert agg.judge_mean == pytest.approx((1 + 0.5 + 0 + 0.67 + 0.33) / 5)  # 0.5
    assert agg.final_mean == pytest.approx((1 + 0.5 + 0 + 0.67 + 0.67) / 5)  # 0.568
    assert agg.human_mean == pytest.approx(0.568)
    assert agg.judge_pass_rate == pytest.approx(3 / 5)
    assert agg.final_pass_rate == pytest.approx(2 / 5)
    assert agg.human_pass_rate == pytest.approx(2 / 5)
    assert agg.reviewed_judge_pass_rate == pytest.approx(3 / 5)
    assert (agg.reviewed, agg.overridden, agg.active_overrides) == (5, 3, 3)
    assert agg.agreement.matrix == {"tp": 1, "fp": 2, "fn": 1, "tn": 1}
    assert agg.agreement.n == 5
    assert agg.agreement.accuracy == pytest.approx(0.4)
    assert agg.agreement.kappa == pytest.approx(-0.08 / 0.52)
    # one active verdict flip over 2+2+2+3+3 verdicts in reviewed results
    assert (agg.verdict_flips, agg.verdict_total) == (1, 12)
    assert agg.verdict_flip_rate == pytest.approx(1 / 12)
    assert agg.error_reasons == [("bad json", 2), ("timeout", 1)]
    assert (
        agg.moved
        == "3 overrides moved the pass rate 60 % → 40 % and the mean 0.5 → 0.568."
    )


@pytest.mark.django_db
def test_histogram_bins_scores_in_the_database(reviewed_run):
    (agg,) = run_aggregates(run_id=reviewed_run.pk)
    h = agg.histogram
    assert h.edges == pytest.approx([i / 10 for i in range(11)])
    # judge 1.0→9 (top edge joins the last bin), 0.5→5, 0→0, 0.67→6, 0.33→3
    assert h.judge == [1, 0, 0, 1, 0, 1, 1, 0, 0, 1]
    # final 1.0, 0.5, 0, 0.67, 0.67
    assert h.final == [1, 0, 0, 0, 0, 1, 2, 0, 0, 1]


@pytest.mark.django_db
def test_in_memory_aggregates_equal_the_database_ones(reviewed_run):
    (db_agg,) = run_aggregates(run_id=reviewed_run.pk)
    rs = reviewed_run.run_scorers.get()
    rows = list(Result.objects.filter(run=reviewed_run).values())
    mem = aggregate_rows(run_scorer=rs, rows=rows)
    for name in (
        "total",
        "ok",
        "errors",
        "reviewed",
        "overridden",
        "verdict_total",
        "active_overrides",
        "verdict_flips",
        "judge_pass_rate",
        "final_pass_rate",
        "human_pass_rate",
        "moved",
    ):
        assert getattr(mem, name) == pytest.approx(getattr(db_agg, name)), name
    assert mem.judge_mean == pytest.approx(db_agg.judge_mean)
    assert mem.final_mean == pytest.approx(db_agg.final_mean)
    assert mem.agreement.matrix == db_agg.agreement.matrix
    assert mem.histogram.judge == db_agg.histogram.judge
    assert mem.histogram.final == db_agg.histogram.final
    assert mem.error_reasons == db_agg.error_reasons


@pytest.mark.django_db
def test_context_relevance_counts_two_verdicts_per_evaluation(project, reviewer):
    run = make_run(
        project, kinds=["context_relevance", "factuality", "content_similarity"]
    )
    for r in Result.objects.filter(run=run):
        result_accept(result=r, user=reviewer)
    aggs = {a.kind: a for a in run_aggregates(run_id=run.pk)}
    assert (
        aggs["context_relevance"].verdict_total == 6
    )  # 3 evaluations × (relevance, used)
    assert aggs["factuality"].verdict_total == 1  # the category
    assert aggs["content_similarity"].verdict_total == 0  # nothing overridable


@pytest.mark.django_db
def test_lower_is_better_pass_and_unreviewed_run(project):
    run = make_run(project, kinds=["hallucination"], n_items=2)
    (agg,) = run_aggregates(run_id=run.pk)
    # [yes, no, no, no] → 0.25 ≤ 0.5: pass
    assert agg.direction == "lower" and agg.judge_pass_rate == 1.0
    assert agg.agreement.n == 0 and agg.agreement.kappa is None
    assert agg.human_pass_rate is None and agg.verdict_flip_rate is None
    assert agg.moved == "No overrides yet: final = judge."


@pytest.mark.django_db
def test_summary_template_shows_three_columns_matrix_and_histogram(reviewed_run):
    aggs = run_aggregates(run_id=reviewed_run.pk)
    html = render_to_string(
        "evals/results/_run_summary.html", {"run": reviewed_run, "aggregates": aggs}
    )
    assert f'id="agg-{aggs[0].run_scorer_id}"' in html
    assert (
        "Judge-only" in html
        and "Human-adjusted (final)" in html
        and "Human-only" in html
    )
    assert "60 %" in html and "40 %" in html
    assert "κ <strong>-0.15</strong>" in html
    assert "3 overrides moved the pass rate 60 % → 40 %" in html
    assert html.count("<rect") == 20  # 10 bins × judge/final
    assert "2 × bad json" in html
