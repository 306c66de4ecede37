"""Calibration samples: a review queue drawn with a known chance per result.

The estimates (selectors.estimates) may use a human label only when the chance that
its result was reviewed is known; a queue built from filters or by hand picks results
for a reason (the failures, the disagreements) and its labels would bias them. A
calibration sample draws each ok result of one run scorer independently (Poisson
sampling) with a probability set by the design:

- uniform: the same chance for every result;
- stratified: the same number expected from each stratum (judge pass / judge fail,
  or score bin), so a rare verdict is not left with a handful of labels;
- active: a chance proportional to the judge's uncertainty on the result (a score
  near the threshold, a split verdict), never below the floor (active inference,
  Zrnic & Candès 2024; confidence-driven inference, Gligorić et al. 2025).

Each entry keeps its probability and the queue keeps the design and the seed, so the
draw can be repeated and the estimates weight each label by its inverse.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.template.defaultfilters import pluralize

from evalsite.accounts.services.audit import audit_event
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import Result, Run, RunScorer
from evalsite.lib.text import text_check_storable
from evalsite.review.models import QueueEntry, ReviewQueue
from evalsite.review.queues.services import (
    QUEUE_MAX,
    _assign_round_robin,
    _clean_overlap,
)
from scoring.inference import (
    active_design,
    split_uncertainty,
    stratified_design,
    threshold_uncertainty,
    uniform_design,
)

DESIGNS = ("uniform", "stratified", "active")
STRATA = ("verdict", "score_bin")
# The active design's floor (each result keeps at least this share of the uniform
# chance). Low floors pay off only when the judge's uncertainty predicts its errors; a
# judge that is confidently wrong puts labels with weights 1/π in the estimate. In a
# simulation of both cases (2,000 results, 500 labels, 300 draws): a judge wrong on
# its threshold results gave intervals 34 % narrower than uniform at floor 0.05, 25 %
# at 0.5; a judge also wrong on 1 in 5 of its sure passes gave, at 0.05, intervals
# 2.5 × uniform's that covered the truth 88 % of the time, at 0.5 within 5 % of
# uniform's, covering 96 %. Hence half uniform, half by uncertainty by default.
DEFAULT_FLOOR = 0.5
SCORE_BINS = 5


@dataclass(frozen=True)
class SampleDesign:
    """What a lead asks for: the design, how many labels to expect, and its knobs."""

    design: str = "active"
    budget: int = 50
    floor: float = DEFAULT_FLOOR
    strata: str = "verdict"
    seed: int = 0


def judge_uncertainty(
    scores: Sequence[float | None],
    *,
    threshold: float | None,
    scale: float,
    splits: Sequence[float | None] | None = None,
) -> list[float]:
    """How unsure the judge was on each result, 0 (sure) … 1 (a coin toss).

    A judge asked several times says it itself: ``splits`` (Result.judge_uncertainty,
    the share of its answers that disagree with the majority, 0 … 0.5) becomes
    ``split_uncertainty`` of its pass fraction, 2 × split: 0 when the answers agree, 1
    for a tie. Otherwise a score at the threshold is a split verdict (for the
    verdict-counting kinds the score is the share of verdicts that held); the farther
    from it, the surer, down to 0 at the far end of the scale. A result without a
    score, or a scorer without a threshold, counts as fully uncertain: nothing says
    the judge was sure.
    """
    reach = max(threshold, scale - threshold) if threshold is not None else 0.0
    if threshold is None or reach <= 0:
        by_score = [1.0] * len(scores)
    else:
        # A missing score is put on the threshold, where the uncertainty is 1.
        filled = [threshold if s is None else s for s in scores]
        by_score = [float(u) for u in threshold_uncertainty(filled, threshold, reach)]
    if splits is None:
        return by_score
    return [
        float(split_uncertainty([1.0 - split])[0]) if split is not None else u
        for u, split in zip(by_score, splits, strict=True)
    ]


def _stratum(row: dict[str, Any], strata: str, scale: float) -> str:
    if strata == "score_bin":
        score = row["judge_score"]
        if score is None:
            return "none"
        position = int(score * SCORE_BINS / scale) if scale else 0
        return f"bin{min(max(position, 0), SCORE_BINS - 1)}"
    passed = row["judge_passed"]
    return "none" if passed is None else ("pass" if passed else "fail")


def _probabilities(
    rows: list[dict[str, Any]],
    spec: SampleDesign,
    threshold: float | None,
    scale: float,
) -> list[float]:
    if spec.design == "uniform":
        return [float(p) for p in uniform_design(len(rows), spec.budget)]
    if spec.design == "stratified":
        labels = [_stratum(r, spec.strata, scale) for r in rows]
        return [float(p) for p in stratified_design(labels, spec.budget)]
    uncertainty = judge_uncertainty(
        [r["judge_score"] for r in rows],
        threshold=threshold,
        scale=scale,
        splits=[r.get("judge_uncertainty") for r in rows],
    )
    return [float(p) for p in active_design(uncertainty, spec.budget, floor=spec.floor)]


def _clean_spec(spec: SampleDesign) -> None:
    if spec.design not in DESIGNS:
        raise ApplicationError(
            "The design is uniform, stratified or active.",
            field_errors={"design": "uniform, stratified or active"},
        )
    if spec.strata not in STRATA:
        raise ApplicationError(
            "Strata are the judge's verdict or its score bin.",
            field_errors={"strata": "verdict or score_bin"},
        )
    if not 1 <= spec.budget <= QUEUE_MAX:
        raise ApplicationError(
            f"A sample asks for between 1 and {QUEUE_MAX} labels.",
            field_errors={"budget": f"between 1 and {QUEUE_MAX}"},
        )
    if not 0 < spec.floor <= 1:
        raise ApplicationError(
            "The floor is a probability above 0 and at most 1.",
            field_errors={"floor": "above 0, at most 1"},
        )
    if spec.seed < 0:
        raise ApplicationError(
            "The seed is a whole number, 0 or more.",
            field_errors={"seed": "0 or more"},
        )


@transaction.atomic(durable=True)
def calibration_sample_create(
    *,
    run: Run,
    run_scorer: RunScorer,
    user: User,
    spec: SampleDesign,
    name: str = "",
    blind: bool = True,
    overlap: int | None = None,
    final_rule: str | None = None,
    assign_round_robin: bool = False,
) -> ReviewQueue:
    """Draw a calibration sample of `run_scorer`'s ok results into a new queue.

    1. Give every ok result its inclusion probability under the design (expected
       sample size = the budget, each probability capped at 1).
    2. Draw each result independently with its probability, from a generator seeded
       with `spec.seed` (the same seed on the same run draws the same sample), and
       shuffle the drawn ones with it, so the order says nothing about the design
       and reviewers who stop half-way leave a random part of it unanswered.
    3. Create the queue (design and seed recorded) and its entries with their
       probabilities; audit; optionally assign round-robin.
    Blind by default: a reviewer who sees the judge's verdict first leans towards it,
    and the estimate is only as good as the labels are independent of the judge.
    """
    text_check_storable(name, field="name")
    _clean_spec(spec)
    if run_scorer.run_id != run.pk:
        raise ApplicationError("That scorer is not one of this run's.")
    overlap, final_rule = _clean_overlap(run, overlap, final_rule)
    options = run_scorer.options or {}
    scale = float(options.get("scale") or 1.0)
    threshold = options.get("threshold")
    rows: list[dict[str, Any]] = [
        dict(row)
        for row in Result.objects.filter(run_scorer=run_scorer, status=Result.Status.OK)
        .order_by("pk")
        .values("pk", "judge_score", "judge_passed", "judge_uncertainty")
    ]
    if not rows:
        raise ApplicationError("This scorer has no judged results to sample from.")
    probabilities = _probabilities(rows, spec, threshold, scale)
    rng = random.Random(spec.seed)
    drawn = [
        (row["pk"], p)
        for row, p in zip(rows, probabilities, strict=True)
        if rng.random() < p
    ]
    if not drawn:
        raise ApplicationError(
            "The draw picked no result: ask for more labels or another seed."
        )
    rng.shuffle(drawn)
    design = {
        "design": spec.design,
        "run_scorer_id": run_scorer.pk,
        "budget": spec.budget,
        "floor": spec.floor if spec.design == "active" else None,
        "strata": spec.strata if spec.design == "stratified" else None,
        "seed": spec.seed,
        "population": len(rows),
        "threshold": threshold,
        "scale": scale,
    }
    size = len(drawn)
    queue = ReviewQueue.objects.create(
        project=run.project,
        run=run,
        name=name.strip()
        or f"Calibration sample · {run_scorer.name} · {spec.design} · {size} result{pluralize(size)}",
        source=ReviewQueue.Source.CALIBRATION,
        filters={"run_scorer": run_scorer.pk, "status": Result.Status.OK},
        design=design,
        blind=blind,
        overlap=overlap,
        final_rule=final_rule,
        size=size,
        created_by=user,
    )
    QueueEntry.objects.bulk_create(
        QueueEntry(queue=queue, result_id=rid, position=pos, inclusion_probability=p)
        for pos, (rid, p) in enumerate(drawn, 1)
    )
    audit_event(
        project=run.project,
        actor=user,
        action="queue.create",
        summary=(
            f"drew calibration sample “{queue.name}” ({size} of {len(rows)} "
            f"result{pluralize(len(rows))}, {spec.design})"
        ),
        after={"queue_id": queue.pk, "source": queue.source, **design, "size": size},
        run=run,
    )
    if assign_round_robin:
        _assign_round_robin(queue=queue, user=user)
    return queue
