"""The corrected figures recounted from raw rows, the slow and obvious way: the
check the selector's grouped query, cache and value-count rebuild must pass."""

from __future__ import annotations

import numpy as np

from evalsite.evals.models import Result
from evalsite.review.models import QueueEntry, ReviewQueue
from scoring.inference import NotEnoughData, ppi_mean_ipw


def recount(run_scorer, metric: str = "pass_rate"):
    """(estimate, half_width) or None, from every result row and entry row."""
    judge_field, human_field = (
        ("judge_passed", "final_passed")
        if metric == "pass_rate"
        else ("judge_score", "final_score")
    )
    samples = list(
        ReviewQueue.objects.filter(
            source=ReviewQueue.Source.CALIBRATION,
            design__run_scorer_id=run_scorer.pk,
        ).order_by("-created_at", "-id")
    )
    answered = {
        q.pk: sum(
            1
            for e in QueueEntry.objects.filter(queue=q).select_related("result")
            if e.result.reviewed and e.result.status == Result.Status.OK
        )
        for q in samples
    }
    best = None
    for q in samples:
        if answered[q.pk] and (best is None or answered[q.pk] > answered[best.pk]):
            best = q
    if best is None:
        return None
    share = answered[best.pk] / best.size
    labelled = {}
    for e in QueueEntry.objects.filter(queue=best).select_related("result"):
        r = e.result
        if r.reviewed and r.status == Result.Status.OK:
            judge, human = getattr(r, judge_field), getattr(r, human_field)
            if judge is not None and human is not None:
                labelled[r.pk] = (float(human), e.inclusion_probability * share)
    yhat, pi, mask, y = [], [], [], []
    for r in Result.objects.filter(run_scorer=run_scorer, status=Result.Status.OK):
        judge = getattr(r, judge_field)
        if judge is None:
            continue
        yhat.append(float(judge))
        if r.pk in labelled:
            mask.append(True)
            y.append(labelled[r.pk][0])
            pi.append(labelled[r.pk][1])
        else:
            mask.append(False)
            pi.append(0.0)
    # Labels in the mask's order.
    try:
        est = ppi_mean_ipw(np.array(yhat), np.array(pi), np.array(mask), np.array(y))
    except NotEnoughData:
        return None
    return est.estimate, est.half_width
