"""Estimates you can defend: each scorer's pass rate and mean score, corrected by the
human labels of a calibration sample, with a 95 % interval.

Prediction-powered inference (Angelopoulos et al. 2023, power-tuned as PPI++) takes
the judge on every result and the humans on the sampled ones; each label is weighted
by the inverse of its result's chance of being drawn (services.calibration), so an
active sample that favours the judge's uncertain results stays unbiased. The
statistics are `scoring.estimates`; this module gathers their inputs:

- the judge side: every ok result's judge score and pass as a multiset (value →
  count), one grouped query, cached like the aggregates' judge side once the run is
  finished (only a rescore or a retry changes it);
- the label side: the answered entries of the scorer's calibration sample with their
  inclusion probabilities (a few thousand rows at most), read on every call, so an
  answer shows in the next figure without any cache to carry.

A label from anywhere else (a failures queue, an override on the item page, a
disagreement queue) is counted but not used: nobody knows the chance its result had
of being looked at, and the results people choose to look at are not like the rest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count

from evalsite.evals.models import Result, Run, RunScorer
from evalsite.evals.results.aggregates import run_aggregates
from evalsite.review.models import QueueEntry, ReviewQueue
from scoring.inference import (
    NotEnoughData,
    labels_needed,
    minimum_detectable_difference,
    ppi_mean_ipw,
)

logger = logging.getLogger(__name__)
CACHE_TTL = 24 * 3600

ALPHA = 0.05
UNUSED_REASON = (
    "counted, not used, because their chance of being reviewed is unknown "
    "(picked by a filter or by hand, not drawn)"
)


@dataclass(frozen=True)
class Figure:
    """One corrected quantity (the pass rate or the mean score) of one scorer."""

    metric: str  # "pass_rate" or "mean"
    judge: float | None  # the judge alone, over every result
    adjusted: float | None  # human-adjusted: human labels where reviewed, else judge
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    half_width: float | None
    labels: int  # human labels the estimate uses
    population: int  # results the judge scored
    human_only: float | None  # the labels alone (weighted), for comparison
    human_only_half_width: float | None
    effective_labels: float | None  # labels alone that would give the same width
    sentence: str = ""

    @property
    def labels_added(self) -> float | None:
        """How many labels the judge was worth on top of the real ones."""
        if self.effective_labels is None:
            return None
        return max(0.0, self.effective_labels - self.labels)


@dataclass(frozen=True)
class SampleInfo:
    queue_id: int
    name: str
    design: str
    size: int
    answered: int


@dataclass(frozen=True)
class ScorerEstimates:
    run_scorer_id: int
    name: str
    scale: float
    sample: SampleInfo | None
    labels_used: int
    labels_unused: int
    unused_reason: str
    pass_rate: Figure | None = None
    mean: Figure | None = None
    samples: list[SampleInfo] = field(default_factory=list)
    # Where the unused labels come from: [(queue name or "no queue", results)], filled
    # by `unused_sources` (the run page and the API).
    unused_sources: list[tuple[str, int]] = field(default_factory=list)

    @property
    def figures(self) -> list[Figure]:
        return [f for f in (self.pass_rate, self.mean) if f is not None]


@dataclass(frozen=True)
class Population:
    """Every ok result's judge values, as value → count (order is irrelevant)."""

    scores: dict[float, int]
    passes: dict[bool, int]


def _population_key(rs: RunScorer) -> str | None:
    """Like the aggregates' judge side: in a finished run the judge values change
    only by a rescore (new options) or a retry (a new finish time)."""
    run: Run = rs.run
    if run.status not in Run.FINISHED or run.finished_at is None:
        return None
    digest = hashlib.sha256(
        json.dumps(rs.options or {}, sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    return (
        f"review:estimates-population:v1:{rs.pk}:{digest}:{run.status}:"
        f"{run.finished_at.isoformat()}"
    )


def _cache_get(key: str) -> Any:
    try:
        return cache.get(key)
    except Exception:  # noqa: BLE001 - an unreachable cache only costs a recount
        logger.warning("estimates cache unavailable", exc_info=True)
        return None


def _cache_set(key: str, value: Any) -> None:
    try:
        cache.set(key, value, CACHE_TTL)
    except Exception:  # noqa: BLE001 - the next read recounts
        logger.warning("estimates cache unavailable", exc_info=True)


def _population(rs: RunScorer) -> Population:
    """One grouped query over the scorer's ok results, cached once the run is
    finished (see `_population_key`)."""
    key = _population_key(rs)
    if key is not None:
        cached: Population | None = _cache_get(key)
        if cached is not None:
            return cached
    rows = (
        Result.objects.filter(run_scorer_id=rs.pk, status=Result.Status.OK)
        .values("judge_score", "judge_passed")
        .annotate(n=Count("run_scorer"))
        .order_by()
    )
    scores: dict[float, int] = {}
    passes: dict[bool, int] = {}
    for row in rows:
        if row["judge_score"] is not None:
            value = float(row["judge_score"])
            scores[value] = scores.get(value, 0) + row["n"]
        if row["judge_passed"] is not None:
            passes[row["judge_passed"]] = passes.get(row["judge_passed"], 0) + row["n"]
    out = Population(scores=scores, passes=passes)
    if key is not None:
        _cache_set(key, out)
    return out


def calibration_samples(*, run_scorer_id: int) -> list[ReviewQueue]:
    """The run scorer's calibration samples, newest first."""
    return list(
        ReviewQueue.objects.filter(
            source=ReviewQueue.Source.CALIBRATION,
            design__run_scorer_id=run_scorer_id,
        ).order_by("-created_at", "-id")
    )


@dataclass(frozen=True)
class _Label:
    probability: float
    judge_score: float | None
    judge_passed: bool | None
    human_score: float | None
    human_passed: bool | None


def _labels(queue: ReviewQueue) -> list[_Label]:
    """The sample's answered entries: their result is reviewed (a single answer, or
    the decided answer of an overlap queue) and ok."""
    rows = QueueEntry.objects.filter(
        queue=queue,
        result__reviewed=True,
        result__status=Result.Status.OK,
        inclusion_probability__isnull=False,
    ).values_list(
        "inclusion_probability",
        "result__judge_score",
        "result__judge_passed",
        "result__final_score",
        "result__final_passed",
    )
    return [
        _Label(float(pi or 0.0), score, passed, human_score, human_passed)
        for pi, score, passed, human_score, human_passed in rows
    ]


def _sample_labels(samples: Sequence[ReviewQueue]) -> dict[int, list[_Label]]:
    """Every sample's labels in one query (see `_labels`), by queue id."""
    out: dict[int, list[_Label]] = {q.pk: [] for q in samples}
    if not samples:
        return out
    rows = QueueEntry.objects.filter(
        queue_id__in=list(out),
        result__reviewed=True,
        result__status=Result.Status.OK,
        inclusion_probability__isnull=False,
    ).values_list(
        "queue_id",
        "inclusion_probability",
        "result__judge_score",
        "result__judge_passed",
        "result__final_score",
        "result__final_passed",
    )
    for queue_id, pi, score, passed, human_score, human_passed in rows:
        out[queue_id].append(
            _Label(float(pi or 0.0), score, passed, human_score, human_passed)
        )
    return out


def _pick_sample(
    samples: Sequence[ReviewQueue], answered: dict[int, int]
) -> ReviewQueue | None:
    """The sample the estimate uses: the one with the most labels (the newest on a
    tie). Two samples are not pooled: a result's chance of being in either is not
    what either recorded."""
    best = None
    for q in samples:  # newest first, so ">" keeps the newest on a tie
        if answered.get(q.pk, 0) and (
            best is None or answered[q.pk] > answered[best.pk]
        ):
            best = q
    return best


def _answered_counts(samples: Sequence[ReviewQueue]) -> dict[int, int]:
    if not samples:
        return {}
    rows = (
        QueueEntry.objects.filter(
            queue__in=samples,
            result__reviewed=True,
            result__status=Result.Status.OK,
        )
        .values("queue_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return {r["queue_id"]: r["n"] for r in rows}


def _pct_points(value: float) -> str:
    return f"{value * 100:.0f}"


def figure_sentence(fig: Figure, *, scale: float = 1.0) -> str:
    """The figure in words a lead can repeat: "judge 82 %; corrected 76 % ± 3 % from
    200 human labels: the judge overstates this pass rate by about 6 points; the judge
    added the equivalent of 340 labels"."""
    if fig.estimate is None or fig.half_width is None:
        return "No labels from a calibration sample yet: nothing to correct with."
    is_rate = fig.metric == "pass_rate"

    def show(v: float | None) -> str:
        if v is None:
            return "–"
        return f"{v * 100:.0f} %" if is_rate else f"{v:.3g}"

    noun = "pass rate" if is_rate else "mean score"
    hw = f"{fig.half_width * 100:.0f} %" if is_rate else f"{fig.half_width:.2g}"
    labels = f"{fig.labels} human label{'s' if fig.labels != 1 else ''}"
    out = (
        f"judge {show(fig.judge)}; corrected {show(fig.estimate)} ± {hw} from {labels}"
    )
    if fig.judge is not None and fig.ci_low is not None and fig.ci_high is not None:
        gap = fig.judge - fig.estimate
        size = (
            f"about {_pct_points(abs(gap))} points"
            if is_rate
            else f"about {abs(gap):.2g}"
        )
        if fig.ci_low <= fig.judge <= fig.ci_high:
            out += f": the judge's {noun} is within the interval"
        elif gap > 0:
            out += f": the judge overstates this {noun} by {size}"
        else:
            out += f": the judge understates this {noun} by {size}"
    if fig.labels_added is not None:
        out += f"; the judge added the equivalent of {fig.labels_added:.0f} labels"
    return out + "."


def _unlabelled(population: dict[float, int], labelled: Any) -> Any:
    """The judge values of the results without a label, rebuilt from the
    population's value counts minus the labelled ones (order does not matter)."""
    rest = dict(population)
    for yhat in labelled:
        rest[float(yhat)] = rest.get(float(yhat), 0) - 1
    values = np.fromiter(rest.keys(), dtype=np.float64, count=len(rest))
    counts = np.fromiter(
        (max(0, n) for n in rest.values()), dtype=np.int64, count=len(rest)
    )
    return np.repeat(values, counts)


def _figure(
    *,
    metric: str,
    population: dict[float, int],
    labels: list[tuple[float, float, float]],
    adjusted: float | None,
    scale: float,
) -> Figure | None:
    """One figure from the judge's values over every result (value → count) and the
    used labels as (human y, judge ŷ, inclusion probability)."""
    total = sum(population.values())
    if not total:
        return None
    judge = math.fsum(v * n for v, n in population.items()) / total
    empty = Figure(
        metric=metric,
        judge=judge,
        adjusted=adjusted,
        estimate=None,
        ci_low=None,
        ci_high=None,
        half_width=None,
        labels=len(labels),
        population=total,
        human_only=None,
        human_only_half_width=None,
        effective_labels=None,
    )
    if not labels:
        return _with_sentence(empty, scale)
    # The estimator wants one judge value per result: the labelled ones first (with
    # their probabilities), then the rest of the population's values.
    n = len(labels)
    labelled = np.array(labels, dtype=np.float64)
    yhat_all = np.concatenate([labelled[:, 1], _unlabelled(population, labelled[:, 1])])
    inclusion = np.zeros(yhat_all.shape[0])
    inclusion[:n] = labelled[:, 2]
    mask = np.zeros(yhat_all.shape[0], dtype=bool)
    mask[:n] = True
    try:
        est = ppi_mean_ipw(yhat_all, inclusion, mask, labelled[:, 0], alpha=ALPHA)
    except NotEnoughData as exc:
        return replace(empty, sentence=f"Not enough labels yet: {exc}.")
    fig = replace(
        empty,
        estimate=est.estimate,
        ci_low=est.ci_low,
        ci_high=est.ci_high,
        half_width=est.half_width,
        human_only=est.classical_estimate,
        human_only_half_width=est.classical_half_width,
        effective_labels=est.effective_labels,
    )
    return _with_sentence(fig, scale)


def _with_sentence(fig: Figure, scale: float) -> Figure:
    return replace(fig, sentence=figure_sentence(fig, scale=scale))


def _labels_of(
    labels: list[_Label], answered: int, size: int
) -> tuple[list[tuple[float, float, float]], list[tuple[float, float, float]]]:
    """(pass-rate labels, mean labels) as (y, ŷ, π).

    Reviewers work a sample in its (shuffled) order, so the answered part of it is a
    random part: a result's chance of being labelled is its chance of being drawn
    times the share of the sample answered so far.
    """
    share = answered / size if size else 0.0
    passes, means = [], []
    for lab in labels:
        pi = lab.probability * share
        if pi <= 0:
            continue
        if lab.human_passed is not None and lab.judge_passed is not None:
            passes.append((float(lab.human_passed), float(lab.judge_passed), pi))
        if lab.human_score is not None and lab.judge_score is not None:
            means.append((float(lab.human_score), float(lab.judge_score), pi))
    return passes, means


def scorer_estimates(
    *,
    run_scorer: RunScorer,
    reviewed: int | None = None,
    final_pass_rate: float | None = None,
    final_mean: float | None = None,
) -> ScorerEstimates:
    """The corrected pass rate and mean of one run scorer (see the module doc).

    `reviewed`, `final_pass_rate`, `final_mean`: the aggregates' figures when the
    caller has them (the run page does); without them the reviewed results are
    counted and the human-adjusted figures left out. Three queries: the samples,
    the labels of all of them at once, and (uncached) the judge's values.
    """
    options = run_scorer.options or {}
    scale = float(options.get("scale") or 1.0)
    samples = calibration_samples(run_scorer_id=run_scorer.pk)
    by_sample = _sample_labels(samples)
    answered = {pk: len(labels) for pk, labels in by_sample.items()}
    infos = [
        SampleInfo(
            queue_id=q.pk,
            name=q.name,
            design=str(q.design.get("design", "")),
            size=q.size,
            answered=answered.get(q.pk, 0),
        )
        for q in samples
    ]
    sample = _pick_sample(samples, answered)
    if reviewed is None:
        # The partial index review_result_touched_idx holds just these rows.
        reviewed = Result.objects.filter(
            run_scorer_id=run_scorer.pk, status=Result.Status.OK, reviewed=True
        ).count()
    population = _population(run_scorer)
    used: list[_Label] = []
    info = None
    if sample is not None:
        used = by_sample[sample.pk]
        info = next(i for i in infos if i.queue_id == sample.pk)
    pass_labels, mean_labels = _labels_of(used, len(used), sample.size if sample else 0)
    labels_used = len(used)
    return ScorerEstimates(
        run_scorer_id=run_scorer.pk,
        name=run_scorer.name,
        scale=scale,
        sample=info,
        samples=infos,
        labels_used=labels_used,
        labels_unused=max(0, (reviewed or 0) - labels_used),
        unused_reason=UNUSED_REASON,
        pass_rate=_figure(
            metric="pass_rate",
            population={float(k): v for k, v in population.passes.items()},
            labels=pass_labels,
            adjusted=final_pass_rate,
            scale=scale,
        ),
        mean=_figure(
            metric="mean",
            population=population.scores,
            labels=mean_labels,
            adjusted=final_mean,
            scale=scale,
        ),
    )


def unused_sources(
    *, run_scorer_id: int, sample_id: int | None, unused: int
) -> list[tuple[str, int]]:
    """Where the reviewed results the estimate does not use were reviewed: per other
    queue (a result in two queues counts in both), and outside any queue (item page
    overrides, bulk accepts), so the run page can say which labels it leaves out."""
    if not unused:
        return []
    entries = QueueEntry.objects.filter(
        result__run_scorer_id=run_scorer_id,
        result__reviewed=True,
        result__status=Result.Status.OK,
    )
    results = Result.objects.filter(
        run_scorer_id=run_scorer_id,
        reviewed=True,
        status=Result.Status.OK,
        queue_entries__isnull=False,
    )
    if sample_id is not None:
        # A sampled result is used, whatever other queue it is also in.
        entries = entries.exclude(result__queue_entries__queue_id=sample_id)
        results = results.exclude(queue_entries__queue_id=sample_id)
    rows = (
        entries.values("queue_id", "queue__name")
        .annotate(n=Count("pk"))
        .order_by("-n", "queue_id")
    )
    out = [(str(r["queue__name"]), int(r["n"])) for r in rows]
    in_queues = results.distinct().count()
    if unused > in_queues:
        out.append(("no queue (the item page, bulk accept)", unused - in_queues))
    return out


def run_estimates(*, run_id: int) -> list[ScorerEstimates]:
    """`scorer_estimates` for every scorer of the run, in the run's order, with where
    the labels they leave out came from (the run page's corrected estimates, the
    estimates API and export)."""
    scorers = {
        rs.pk: rs
        for rs in RunScorer.objects.filter(run_id=run_id).select_related("run")
    }
    estimates = []
    # The aggregates hold the human-adjusted figures the estimates are shown beside.
    for agg in run_aggregates(run_id=run_id):
        est = scorer_estimates(
            run_scorer=scorers[agg.run_scorer_id],
            reviewed=agg.reviewed,
            final_pass_rate=agg.final_pass_rate,
            final_mean=agg.final_mean,
        )
        estimates.append(
            replace(
                est,
                unused_sources=unused_sources(
                    run_scorer_id=agg.run_scorer_id,
                    sample_id=est.sample.queue_id if est.sample else None,
                    unused=est.labels_unused,
                ),
            )
        )
    return estimates


@dataclass(frozen=True)
class SamplePlan:
    """How many labels a pass-rate interval of ± `half_width` needs, from the
    judge–human disagreement seen so far, and the smallest difference today's labels
    can detect (two-sided 5 %, power 80 %)."""

    run_scorer_id: int
    half_width: float
    basis: str  # "calibration", "reviewed" or "" (no labels to plan from)
    labels: int
    population: int
    required: int | None = None
    additional: int | None = None
    reachable: bool = False
    detectable: float | None = None
    detectable_human_only: float | None = None
    message: str = ""


def sample_plan(*, run_scorer: RunScorer, half_width: float) -> SamplePlan:
    """Plan the next sample of `run_scorer` for its pass rate.

    1. The disagreement comes from the calibration sample's labels when it has two
       or more, else from every reviewed result (picked, not drawn: people review
       the doubtful ones, so the plan errs towards asking for more).
    2. labels_needed: the first number of labels whose interval reaches the target;
       minimum_detectable_difference at today's labels.
    """
    population = {float(k): v for k, v in _population(run_scorer).passes.items()}
    total = sum(population.values())
    samples = calibration_samples(run_scorer_id=run_scorer.pk)
    sample = _pick_sample(samples, _answered_counts(samples))
    pairs: list[tuple[float, float]] = []
    basis = ""
    if sample is not None:
        pairs = [
            (float(lab.human_passed), float(lab.judge_passed))
            for lab in _labels(sample)
            if lab.human_passed is not None and lab.judge_passed is not None
        ]
        basis = "calibration"
    if len(pairs) < 2:
        pairs = [
            (float(bool(human)), float(bool(judge)))
            for human, judge in Result.objects.filter(
                run_scorer_id=run_scorer.pk,
                status=Result.Status.OK,
                reviewed=True,
                final_passed__isnull=False,
                judge_passed__isnull=False,
            ).values_list("final_passed", "judge_passed")
        ]
        basis = "reviewed"
    plan = SamplePlan(
        run_scorer_id=run_scorer.pk,
        half_width=half_width,
        basis=basis if pairs else "",
        labels=len(pairs),
        population=total,
    )
    if not total:
        return replace(plan, message="This scorer has no judged results yet.")
    y = np.array([p[0] for p in pairs], dtype=np.float64)
    yhat = np.array([p[1] for p in pairs], dtype=np.float64)
    rest = _unlabelled(population, yhat)
    try:
        need = labels_needed(y, yhat, rest, half_width=half_width, alpha=ALPHA)
        mdd = minimum_detectable_difference(y, yhat, rest, alpha=ALPHA)
    except NotEnoughData as exc:
        return replace(
            plan,
            message=f"Review a few results first: {exc}.",
        )
    plan = replace(
        plan,
        required=need.n_required,
        additional=need.additional,
        reachable=need.reachable,
        detectable=mdd.ppi,
        detectable_human_only=mdd.classical,
    )
    if not need.reachable:
        message = (
            f"Even labelling all {total} results would not narrow the pass rate to "
            f"± {half_width * 100:.1f} points."
        )
    else:
        message = (
            f"± {half_width * 100:.1f} points on the pass rate needs about "
            f"{need.n_required} labels: {need.additional} more than the {len(pairs)} "
            "there are."
        )
    message += (
        f" Today's labels detect a difference of {mdd.ppi * 100:.1f} points "
        f"(human labels alone: {mdd.classical * 100:.1f})."
    )
    return replace(plan, message=message)
