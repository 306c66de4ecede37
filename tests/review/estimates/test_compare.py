from __future__ import annotations

import random

import pytest
from django.urls import reverse

from evalsite.datasets.matching.selectors import MatchSpec
from evalsite.datasets.matching.services import dataset_match_get_or_create
from evalsite.evals.results.verdicts import result_set_human_pass
from evalsite.review.estimates.compare import corrected_difference
from evalsite.review.estimates.services import (
    SampleDesign,
    calibration_sample_create,
)
from tests.conftest import login
from tests.factories import DatasetFactory
from tests.review.builders import case_rows, make_run
from tests.review.estimates.builders import FAIL, HALF, PASS, human_truth

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(project):
    ds = DatasetFactory(project=project, name="qa", rows=case_rows(60))
    rng = random.Random(5)
    a = make_run(
        project,
        dataset=ds,
        analyses={"faithfulness": [rng.choice([PASS, HALF, FAIL]) for _ in range(60)]},
    )
    b = make_run(
        project,
        dataset=ds,
        analyses={"faithfulness": [rng.choice([PASS, PASS, FAIL]) for _ in range(60)]},
    )
    return a, b


def _sample_and_answer(run, owner, budget):
    queue = calibration_sample_create(
        run=run,
        run_scorer=run.run_scorers.get(),
        user=owner,
        spec=SampleDesign(design="uniform", budget=budget, seed=1),
    )
    for e in queue.entries.select_related("result__item"):
        result_set_human_pass(result=e.result, user=owner, passed=human_truth(e.result))
    return queue


def _difference(a, b):
    return corrected_difference(
        run_scorer_a=a.run_scorers.get(),
        run_scorer_b=b.run_scorers.get(),
        same_dataset=True,
        match_id=None,
    )


def _human_rate(run):
    results = list(run.run_scorers.get().results.select_related("item"))
    return sum(human_truth(r) for r in results) / len(results)


def test_corrected_difference_needs_a_sample_on_both_runs(runs, owner):
    a, b = runs
    assert "Run A and B has no answered calibration sample" in _difference(a, b).message
    _sample_and_answer(a, owner, 30)
    diff = _difference(a, b)
    assert diff.estimate is None and diff.message.startswith("Run B has no")
    assert diff.matched == 60 and diff.judge_difference is not None


def test_corrected_difference_of_fully_labelled_runs_is_the_human_difference(
    runs, owner
):
    a, b = runs
    _sample_and_answer(a, owner, 60)  # every result drawn with certainty
    _sample_and_answer(b, owner, 60)
    diff = _difference(a, b)
    assert diff.estimate == pytest.approx(_human_rate(b) - _human_rate(a), abs=1e-12)
    assert diff.labels_a == diff.labels_b == 60


def test_corrected_difference_of_samples_has_an_interval(runs, owner):
    a, b = runs
    _sample_and_answer(a, owner, 30)
    _sample_and_answer(b, owner, 30)
    diff = _difference(a, b)
    assert diff.ci_low < diff.estimate < diff.ci_high
    assert diff.detectable > diff.half_width
    assert diff.sentence.startswith("Pass rate B − A: judge ")


def test_compare_page_shows_the_corrected_difference(client, project, runs, owner):
    a, b = runs
    _sample_and_answer(a, owner, 30)
    _sample_and_answer(b, owner, 30)
    login(client, owner)
    url = reverse("compare:compare", args=[project.pk])
    html = client.get(f"{url}?a={a.pk}&b={b.pk}").content.decode()
    assert 'id="compare-corrected"' in html
    assert "corrected by the calibration samples" in html and "± " in html


def test_corrected_difference_plans_the_labels_to_detect_a_difference(runs, owner):
    a, b = runs
    _sample_and_answer(a, owner, 30)
    _sample_and_answer(b, owner, 30)
    rs_a, rs_b = a.run_scorers.get(), b.run_scorers.get()
    plans = [
        corrected_difference(
            run_scorer_a=rs_a,
            run_scorer_b=rs_b,
            same_dataset=True,
            match_id=None,
            detect=detect,
        )
        for detect in (0.02, 0.10)
    ]
    assert plans[0].labels_to_detect > plans[1].labels_to_detect
    # Detecting exactly today's detectable difference needs about today's labels.
    today = plans[1]
    at_today = corrected_difference(
        run_scorer_a=rs_a,
        run_scorer_b=rs_b,
        same_dataset=True,
        match_id=None,
        detect=today.detectable,
    )
    mean_labels = (today.labels_a + today.labels_b) / 2
    assert abs(at_today.labels_to_detect - mean_labels) <= 1


def test_compare_page_takes_the_difference_to_detect(client, project, runs, owner):
    a, b = runs
    _sample_and_answer(a, owner, 30)
    _sample_and_answer(b, owner, 30)
    login(client, owner)
    url = reverse("compare:compare", args=[project.pk])
    html = client.get(f"{url}?a={a.pk}&b={b.pk}&detect=2").content.decode()
    assert "To find 2 points, about" in html
    default = client.get(f"{url}?a={a.pk}&b={b.pk}&detect=oops").content.decode()
    assert "To find 5 points, about" in default


def test_compare_page_shows_the_difference_corrected_from_its_own_counts(
    client, project, runs, owner
):
    # The page takes the judges' verdict counts from compare's (cached) aggregate;
    # counted apart, the corrected difference is the same to the last digit.
    a, b = runs
    _sample_and_answer(a, owner, 30)
    _sample_and_answer(b, owner, 30)
    login(client, owner)
    url = reverse("compare:compare", args=[project.pk])
    for _ in range(2):  # computed, then from the cache
        html = client.get(f"{url}?a={a.pk}&b={b.pk}").content.decode()
        diff = _difference(a, b)
        assert f'data-estimate="{diff.estimate}"' in html
        assert diff.sentence in html


def test_corrected_difference_over_two_datasets_matched_by_key(project, owner):
    rng = random.Random(5)
    rows = case_rows(60)
    analyses_a = [rng.choice([PASS, HALF, FAIL]) for _ in range(60)]
    analyses_b = [rng.choice([PASS, PASS, FAIL]) for _ in range(60)]
    ds = DatasetFactory(project=project, name="qa", rows=rows)
    other = DatasetFactory(project=project, name="qa again", rows=rows)
    a = make_run(project, dataset=ds, analyses={"faithfulness": analyses_a})
    b_same = make_run(project, dataset=ds, analyses={"faithfulness": analyses_b})
    b_other = make_run(project, dataset=other, analyses={"faithfulness": analyses_b})
    for run in (a, b_same, b_other):
        _sample_and_answer(run, owner, 60)
    match = dataset_match_get_or_create(
        datasets=(ds.pk, other.pk), spec=MatchSpec(mode="key", key="row")
    )
    across = corrected_difference(
        run_scorer_a=a.run_scorers.get(),
        run_scorer_b=b_other.run_scorers.get(),
        same_dataset=False,
        match_id=match.pk,
    )
    same = _difference(a, b_same)
    assert across.matched == same.matched == 60
    assert across.labels_a == across.labels_b == 60
    assert across.judge_difference == same.judge_difference
    assert across.estimate == pytest.approx(same.estimate, abs=1e-12)
    assert across.estimate == pytest.approx(
        _human_rate(b_other) - _human_rate(a), abs=1e-12
    )
