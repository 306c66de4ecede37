"""A run scored by a judge with a known bias, for the estimates' tests."""

from __future__ import annotations

import random

from evalsite.evals.models import Result, Run
from tests.review.builders import judged_claims, make_run

PASS = judged_claims("yes", "yes")  # score 1.0, pass
HALF = judged_claims("yes", "no")  # score 0.5, at the threshold: pass
FAIL = judged_claims("no", "no")  # score 0.0, fail


def biased_run(project, *, n_items: int = 60, seed: int = 1) -> Run:
    """A faithfulness run whose judge passes about 3 in 4 results (a few at the
    threshold, where it is least sure)."""
    rng = random.Random(seed)
    analyses = [rng.choice([PASS, PASS, HALF, FAIL]) for _ in range(n_items)]
    return make_run(project, n_items=n_items, analyses={"faithfulness": analyses})


def human_truth(result: Result) -> bool:
    """The humans' verdict in these tests: the judge is wrong on every result it
    scored at the threshold and on every fifth judge pass (by item index)."""
    if result.judge_score == 0.5:
        return False
    if result.judge_passed and result.item.index % 5 == 0:
        return False
    return bool(result.judge_passed)
