"""Review side: no rescore, override or combination of them leaves a
score outside 0-scale, so the aggregates and the histogram never see one."""

from __future__ import annotations

import math

import pytest

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.evals.results.rescore import run_rescore
from evalsite.evals.results.verdicts import override_create
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db

BINS = 10


def _fact_run(project, n_items=4):
    analyses = [{"category": c, "reason": "r"} for c in "ABDE"[:n_items]]
    return make_run(
        project,
        kinds=["factuality"],
        n_items=n_items,
        analyses={"factuality": analyses},
    )


@pytest.mark.parametrize("value", [1.5, -1])
@pytest.mark.parametrize("save", [False, True])
def test_rescore_refuses_category_scores_outside_0_1(project, owner, value, save):
    run = _fact_run(project)
    rs = run.run_scorers.get()
    before = list(Result.objects.filter(run=run).values_list("final_score", flat=True))
    with pytest.raises(ApplicationError) as info:
        run_rescore(
            run=run,
            run_scorer=rs,
            options={"category_scores": {"disagree": value}},
            user=owner,
            save=save,
        )
    assert "options.category_scores.disagree" in info.value.field_errors
    assert (
        list(Result.objects.filter(run=run).values_list("final_score", flat=True))
        == before
    )


@pytest.mark.parametrize("save", [False, True])
def test_rescore_refuses_a_scale_that_leaves_a_kept_score_override_outside(
    project, reviewer, owner, save
):
    run = _fact_run(project)
    rs = run.run_scorers.get()
    result = Result.objects.filter(run=run).order_by("pk").first()
    override_create(result=result, user=reviewer, kind="score", value=0.8)
    with pytest.raises(ApplicationError) as info:
        run_rescore(
            run=run, run_scorer=rs, options={"scale": 0.5}, user=owner, save=save
        )
    assert "1 score override (up to 0.8) would be outside 0-0.5" in info.value.message
    assert "options.scale" in info.value.field_errors
    rs.refresh_from_db()
    assert rs.options["scale"] == 1.0
    # A scale that still holds it is fine.
    run_rescore(run=run, run_scorer=rs, options={"scale": 0.8}, user=owner, save=save)


@pytest.mark.parametrize("value", [-1, 1.5, -0.01, 1.01])
def test_a_score_override_outside_the_scale_is_refused(project, reviewer, value):
    run = _fact_run(project)
    result = Result.objects.filter(run=run).first()
    with pytest.raises(ApplicationError) as info:
        override_create(result=result, user=reviewer, kind="score", value=value)
    assert info.value.field_errors == {"value": "must be between 0 and 1"}


def _recount(rows, scale):
    """The histogram from the raw scores, in plain Python (not the product's code)."""
    counts = [0] * BINS
    for score in rows:
        assert 0 <= score <= scale, score  # nothing outside 0-scale is ever stored
        counts[min(BINS - 1, math.floor(score * BINS / scale))] += 1
    return counts


def test_after_every_source_tries_a_score_outside_the_histogram_recounts_exactly(
    project, owner, reviewer
):
    run = _fact_run(project)
    rs = run.run_scorers.get()
    first, second, *_ = Result.objects.filter(run=run).order_by("pk")
    attempts = [
        lambda: run_rescore(
            run=run,
            run_scorer=rs,
            options={"category_scores": {"disagree": -1, "superset": 1.5}},
            user=owner,
            save=True,
        ),
        lambda: override_create(result=first, user=reviewer, kind="score", value=-1),
        lambda: override_create(result=first, user=reviewer, kind="score", value=1.5),
    ]
    for attempt in attempts:
        with pytest.raises(ApplicationError):
            attempt()
    override_create(result=second, user=reviewer, kind="score", value=0.35)
    with pytest.raises(ApplicationError):
        run_rescore(
            run=run, run_scorer=rs, options={"scale": 0.3}, user=owner, save=True
        )
    run_rescore(
        run=run,
        run_scorer=rs,
        options={"category_scores": {"disagree": 0.25, "subset": 0.75}},
        user=owner,
        save=True,
    )
    rs.refresh_from_db()
    scale = rs.options["scale"]
    rows = list(Result.objects.filter(run=run).values("judge_score", "final_score"))
    (agg,) = run_aggregates(run_id=run.pk)
    assert agg.histogram.judge == _recount([r["judge_score"] for r in rows], scale)
    assert agg.histogram.final == _recount([r["final_score"] for r in rows], scale)
    finals = [r["final_score"] for r in rows]
    assert agg.final_mean == pytest.approx(sum(finals) / len(finals))
    assert sorted(finals) == [0.25, 0.35, 0.75, 1.0]
