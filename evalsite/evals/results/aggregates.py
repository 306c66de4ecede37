"""Per-run × scorer aggregates.

Aggregates are computed by the database (conditional counts and averages, a
histogram bin expression grouped in SQL) so a 100k-result run costs a few
indexed scans, never a Python loop over rows. `aggregate_rows` computes the
same numbers from in-memory rows for the what-if rescore preview; the tests
check that the two agree.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import (
    Count,
    F,
    Func,
    IntegerField,
    Min,
    Q,
    QuerySet,
    Sum,
)

from evalsite.evals.models import Result, ReviewVersion, Run, RunScorer
from evalsite.lib.db import compiled_once
from scoring import KINDS

HISTOGRAM_BINS = 10


logger = logging.getLogger(__name__)


@dataclass
class Agreement:
    """Judge pass/fail vs the human (final) pass/fail on reviewed ok results.

    Positive class = pass. `matrix` keeps the short keys of the API's confusion matrix:
    tp (true positive) judge pass & human pass, fp (false positive) judge pass & human
    fail, fn (false negative) judge fail & human pass, tn (true negative) both fail.
    """

    n: int = 0
    accuracy: float | None = None
    kappa: float | None = None
    matrix: dict[str, int] = field(
        default_factory=lambda: {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    )


@dataclass
class Histogram:
    edges: list[float]
    judge: list[int]
    final: list[int]

    @property
    def max_count(self) -> int:
        return max([1, *self.judge, *self.final])


@dataclass
class ScorerAggregate:
    run_scorer_id: int
    name: str
    kind: str
    label: str
    direction: str
    scale: float
    threshold: float | None
    # scorer_config_id is the ScorerConfig it snapshots (what POST /runs takes as
    # scorer_ids); run_scorer_id the run's own copy (results' run_scorer_id).
    scorer_config_id: int | None = None
    total: int = 0
    ok: int = 0
    errors: int = 0
    pending: int = 0
    cancelled: int = 0
    judge_mean: float | None = None
    final_mean: float | None = None
    human_mean: float | None = None
    judge_pass_rate: float | None = None
    final_pass_rate: float | None = None
    human_pass_rate: float | None = None
    reviewed_judge_mean: float | None = None
    reviewed_judge_pass_rate: float | None = None
    reviewed: int = 0
    overridden: int = 0
    active_overrides: int = 0
    verdict_flips: int = 0
    verdict_total: int = 0
    agreement: Agreement = field(default_factory=Agreement)
    histogram: Histogram | None = None
    error_reasons: list[tuple[str, int]] = field(default_factory=list)
    moved: str = ""

    @property
    def verdict_flip_rate(self) -> float | None:
        return self.verdict_flips / self.verdict_total if self.verdict_total else None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict_flip_rate"] = self.verdict_flip_rate
        data["error_reasons"] = [
            {"message": m, "count": c} for m, c in self.error_reasons
        ]
        return data


# (judge passed, human passed) -> its cell of the confusion matrix (see Agreement).
_MATRIX_CELL = {
    (True, True): "tp",
    (True, False): "fp",
    (False, True): "fn",
    (False, False): "tn",
}


def cohen_kappa(
    *, true_positive: int, false_positive: int, false_negative: int, true_negative: int
) -> tuple[float | None, float | None]:
    """(percent agreement, Cohen's kappa) for a 2×2 confusion matrix.

    No pairs → (None, None). When chance agreement is 1 (both raters used one and the
    same class for every item) kappa's formula is 0/0: we define it as 1.0 when the
    agreement is perfect and 0.0 otherwise (chance agreement 1 implies perfect
    agreement, so in practice 1.0). Raters using different single classes give chance
    agreement 0 and kappa 0.
    """
    n = true_positive + false_positive + false_negative + true_negative
    if n == 0:
        return None, None
    observed = (true_positive + true_negative) / n
    judge_yes, human_yes = (
        true_positive + false_positive,
        true_positive + false_negative,
    )
    judge_no, human_no = false_negative + true_negative, false_positive + true_negative
    chance = (judge_yes * human_yes + judge_no * human_no) / (n * n)
    if chance >= 1.0:
        return observed, 1.0 if observed == 1.0 else 0.0
    return observed, (observed - chance) / (1 - chance)


def _agreement(matrix: dict[str, int]) -> Agreement:
    accuracy, kappa = cohen_kappa(
        true_positive=matrix["tp"],
        false_positive=matrix["fp"],
        false_negative=matrix["fn"],
        true_negative=matrix["tn"],
    )
    return Agreement(
        n=sum(matrix.values()), accuracy=accuracy, kappa=kappa, matrix=dict(matrix)
    )


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.0f} %"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def moved_sentence(agg: ScorerAggregate) -> str:
    """What moved the final numbers away from the judge's, in one sentence."""
    n = agg.active_overrides
    if n == 0:
        if agg.reviewed:
            return f"{agg.reviewed} reviewed, no overrides: final = judge."
        return "No overrides yet: final = judge."
    noun = "override" if n == 1 else "overrides"
    if agg.judge_pass_rate != agg.final_pass_rate:
        sentence = (
            f"{n} {noun} moved the pass rate {_pct(agg.judge_pass_rate)} → "
            f"{_pct(agg.final_pass_rate)}"
        )
    else:
        sentence = f"{n} {noun} left the pass rate at {_pct(agg.final_pass_rate)}"
    if _num(agg.judge_mean) != _num(agg.final_mean):
        sentence += f" and the mean {_num(agg.judge_mean)} → {_num(agg.final_mean)}"
    return sentence + "."


def _edges(scale: float) -> list[float]:
    return [scale * i / HISTOGRAM_BINS for i in range(HISTOGRAM_BINS + 1)]


def bin_of(score: float, scale: float) -> int:
    """Python twin of `ScoreBin` (scores outside [0, scale] go to the end bins).

    Compared before flooring: a score stored before overrides and options were
    range-checked can make the position infinite, which math.floor cannot take.
    """
    position = score * HISTOGRAM_BINS / scale
    if position < 0:
        return 0
    if not position < HISTOGRAM_BINS:  # also NaN, which width_bucket puts last
        return HISTOGRAM_BINS - 1
    return math.floor(position)


class ScoreBin(Func):
    """SQL: the histogram bin of a score, clamp(floor(score × bins / scale), 0, bins − 1).

    Postgres uses width_bucket (one builtin call per row, measurably cheaper than the
    floor/least/greatest chain on 100k rows); NULL scores give NULL bins.
    """

    output_field = IntegerField()

    def __init__(self, field_name: str, scale: float) -> None:
        self.scale = float(scale)
        super().__init__(F(field_name))

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:  # type: ignore[override]  # the compiler calls as_sql(compiler, connection) only
        sql, params = compiler.compile(self.source_expressions[0])
        top = HISTOGRAM_BINS - 1
        if connection.vendor == "postgresql":
            # width_bucket: [0, step) → 1 … [scale, ∞) → bins + 1; below 0 → 0.
            return (
                f"LEAST(GREATEST(width_bucket({sql}, 0, %s, {HISTOGRAM_BINS}) - 1, 0), {top})",
                [*params, self.scale],
            )
        return (
            f"CAST(MAX(MIN(FLOOR({sql} * %s), {top}.0), 0.0) AS INTEGER)",
            [*params, HISTOGRAM_BINS / self.scale],
        )


def _scorer_stub(rs: RunScorer) -> ScorerAggregate:
    spec = KINDS.get(rs.kind)
    options = rs.options or {}
    scale = score_scale(options)
    threshold = options.get(
        "threshold", spec.defaults.get("threshold") if spec else 0.5
    )
    return ScorerAggregate(
        run_scorer_id=rs.pk,
        name=rs.name,
        kind=rs.kind,
        label=spec.label if spec else rs.kind,
        direction=spec.direction if spec else "higher",
        scale=scale,
        threshold=threshold,
        scorer_config_id=rs.scorer_id,
        histogram=Histogram(
            edges=_edges(scale), judge=[0] * HISTOGRAM_BINS, final=[0] * HISTOGRAM_BINS
        ),
    )


# What a reviewed or overridden ok result is counted under (the review side of the
# aggregates); the judge side is counted by status, judge pass and judge bin alone.
GROUP_FIELDS = ("reviewed", "overridden", "judge_passed", "final_passed")


_JUDGE_GROUP_FIELDS = ("status", "judge_passed")


AGGREGATES_CACHE_TTL = 24 * 3600


# Error messages kept per run scorer: enough for the run's 50 most frequent (scorer,
# message) groups (evals.runs.selectors.run_error_groups), which are among them.
ERROR_GROUPS_PER_SCORER = 50


@dataclass
class JudgeGroups:
    """The judge side of one run scorer: grouped counts and its errored results
    grouped by message, (message, count, smallest result id), most frequent first
    (then by message, in the database's order)."""

    groups: list[dict[str, Any]]
    errors: list[tuple[str, int, int]]

    @property
    def error_reasons(self) -> list[tuple[str, int]]:
        """The ten most frequent error messages with their counts."""
        return [(message or "(no message)", n) for message, n, _ in self.errors[:10]]


def _options_digest(options: Any) -> str:
    return hashlib.sha256(
        json.dumps(options or {}, sort_keys=True, default=str).encode()
    ).hexdigest()[:16]


def score_scale(options: Any) -> float:
    return float((options or {}).get("scale") or 1.0)


def cache_get(key: str) -> Any:
    """A cached value, or None; an unreachable cache only costs a recount."""
    try:
        return cache.get(key)
    except Exception:  # noqa: BLE001 - e.g. Redis restarting: count from the database
        logger.warning("aggregates cache unavailable", exc_info=True)
        return None


def cache_get_many(keys: list[str]) -> dict[str, Any]:
    """The cached values of `keys` (those found); an unreachable cache finds none."""
    if not keys:
        return {}
    try:
        return cache.get_many(keys)
    except Exception:  # noqa: BLE001 - e.g. Redis restarting: count from the database
        logger.warning("aggregates cache unavailable", exc_info=True)
        return {}


def cache_set(key: str, value: Any) -> None:
    try:
        cache.set(key, value, AGGREGATES_CACHE_TTL)
    except Exception:  # noqa: BLE001 - the next read recounts
        logger.warning("aggregates cache unavailable", exc_info=True)


def _judge_groups_key(
    run_scorer_id: int, options: Any, status: str, finished_at: Any
) -> str | None:
    """Cache key of a finished run scorer's judge side, None while it can change.

    In a finished run the judge fields change only by a rescore (new options) or a
    retry (the run runs again and finishes at a new time), so options, status and
    finish time identify the judge side; and they are a pure function of the stored
    analyses and the options, so a value computed inside a rolled-back rescore preview
    is still right for those options.
    """
    if status not in Run.FINISHED or finished_at is None:
        return None
    return (
        f"review:judge-groups:v3:{run_scorer_id}:{_options_digest(options)}:{status}:"
        f"{finished_at.isoformat()}"
    )


def _judge_groups_key_now(run_scorer_id: int) -> str | None:
    row = (
        RunScorer.objects.filter(pk=run_scorer_id)
        .values("options", "run__status", "run__finished_at")
        .first()
    )
    if row is None:
        return None
    return _judge_groups_key(
        run_scorer_id, row["options"], row["run__status"], row["run__finished_at"]
    )


def _judge_groups(rs: RunScorer, scale: float) -> JudgeGroups:
    """The judge side of `rs`: one grouped query over all its results (index-only on
    review_result_agg_idx) plus the error messages, cached once the run is finished."""
    run = rs.run
    key = _judge_groups_key(rs.pk, rs.options, run.status, run.finished_at)
    if key is not None:
        cached: JudgeGroups | None = cache_get(key)
        if cached is not None:
            return cached
    results = Result.objects.filter(run_scorer_id=rs.pk)
    groups = list(
        results.annotate(judge_bin=ScoreBin("judge_score", scale))
        .values(*_JUDGE_GROUP_FIELDS, "judge_bin")
        .annotate(
            n=Count("run_scorer"),
            judge_sum=Sum("judge_score"),
            judge_count=Count("judge_score"),
        )
        .order_by()
    )
    errors = [
        (r["error"], r["n"], r["example"])
        for r in results.filter(status=Result.Status.ERROR)
        .values("error")
        .annotate(n=Count("run_scorer"), example=Min("pk"))
        .order_by("-n", "error")[:ERROR_GROUPS_PER_SCORER]
    ]
    out = JudgeGroups(groups=groups, errors=errors)
    pending = any(g["status"] == Result.Status.PENDING for g in groups)
    # Stored only if nothing moved while we counted (a rescore or retry committing
    # between the key read and the count changes the key).
    if key is not None and not pending and _judge_groups_key_now(rs.pk) == key:
        cache_set(key, out)
    return out


JudgeSides = list[tuple[RunScorer, JudgeGroups]]


def cached_judge_sides(*, run: Run) -> JudgeSides | None:
    """The judge side of every scorer of a finished run, from the cache alone (as
    `run_aggregates` left it), or None when the run is not finished or a scorer's
    side is not cached. The run's progress, result count and error groups are folded
    from it rather than counted over the run's results: on bench_million's 1M-result
    run those counts took 1.2-1.4 s (by status), 136 ms (all) and 68 ms (errors by
    message) at load 7-11. Exact for the same reason the cached aggregates are (see
    `_judge_groups_key`); `run` must be as just read (its status and finish time)."""
    return cached_judge_sides_many(runs=[run])[run.pk]


def cached_judge_sides_many(*, runs: Iterable[Run]) -> dict[int, JudgeSides | None]:
    """`cached_judge_sides` of several runs: one query for their scorers and one
    read of the cache (the run list)."""
    runs = list(runs)
    out: dict[int, JudgeSides | None] = {run.pk: None for run in runs}
    finished = {
        run.pk: run
        for run in runs
        if run.status in Run.FINISHED and run.finished_at is not None
    }
    if not finished:
        return out
    scorers = list(
        RunScorer.objects.filter(run_id__in=list(finished))
        .only("id", "run_id", "name", "options", "position")
        .order_by("run_id", "position", "id")
    )
    keys: dict[int, str] = {}
    for rs in scorers:
        run = finished[rs.run_id]
        key = _judge_groups_key(rs.pk, rs.options, run.status, run.finished_at)
        if key is not None:
            keys[rs.pk] = key
    cached = cache_get_many(list(keys.values()))
    sides: dict[int, JudgeSides] = {pk: [] for pk in finished}
    missing: set[int] = set()
    for rs in scorers:
        judge = cached.get(keys.get(rs.pk, ""))
        if judge is None:
            missing.add(rs.run_id)
        else:
            sides[rs.run_id].append((rs, judge))
    for pk, run_sides in sides.items():
        if pk not in missing:
            out[pk] = run_sides
    return out


# A review row: what the review side counts of one reviewed or overridden ok result.
_REVIEW_ROW_FIELDS = (
    *GROUP_FIELDS,
    "judge_score",
    "final_score",
    "active_override_count",
    "verdict_flip_count",
    "overridable_count",
)


REVIEW_GROUP_KEY = (*GROUP_FIELDS, "judge_bin", "final_bin")


def review_row(result: Result) -> dict[str, Any] | None:
    """The review side's view of one result; None when it is not counted there (not
    ok, or neither reviewed nor overridden)."""
    return review_row_of(
        {f: getattr(result, f) for f in ("status", *_REVIEW_ROW_FIELDS)}
    )


def review_row_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """`review_row` of a row given as a mapping (e.g. from .values())."""
    if row["status"] != Result.Status.OK or not (row["reviewed"] or row["overridden"]):
        return None
    return {f: row[f] for f in _REVIEW_ROW_FIELDS}


def review_groups_key(run_scorer_id: int, options: Any, version: int) -> str:
    """The review side is a pure function of the review writes (counted by the
    version) and the options (a rescore rewrites the scores), so both name it."""
    return (
        f"review:review-groups:v2:{run_scorer_id}:{_options_digest(options)}:{version}"
    )


def _review_version(rs: RunScorer) -> int:
    try:
        return rs.review_version.version
    except ObjectDoesNotExist:
        return 0


def _review_version_now(run_scorer_id: int) -> int:
    version = (
        ReviewVersion.objects.filter(run_scorer_id=run_scorer_id)
        .values_list("version", flat=True)
        .first()
    )
    return version or 0


def shift_group(
    groups: dict[tuple[Any, ...], dict[str, Any]],
    row: Mapping[str, Any],
    scale: float,
    sign: int,
) -> None:
    """Add (sign 1) or take away (sign -1) one review row in SQL-shaped groups."""
    judge_score, final_score = row["judge_score"], row["final_score"]
    fields = {f: row[f] for f in GROUP_FIELDS}
    fields["judge_bin"] = None if judge_score is None else bin_of(judge_score, scale)
    fields["final_bin"] = None if final_score is None else bin_of(final_score, scale)
    key = tuple(fields.values())
    g = groups.setdefault(
        key,
        {
            **fields,
            **dict.fromkeys(
                ("n", "judge_count", "final_count", "active", "flips", "verdicts"), 0
            ),
            "judge_sum": 0.0,
            "final_sum": 0.0,
        },
    )
    g["n"] += sign
    g["judge_sum"] = (g["judge_sum"] or 0.0) + sign * (judge_score or 0.0)
    g["final_sum"] = (g["final_sum"] or 0.0) + sign * (final_score or 0.0)
    g["judge_count"] += sign * (judge_score is not None)
    g["final_count"] += sign * (final_score is not None)
    g["active"] = (g["active"] or 0) + sign * row["active_override_count"]
    g["flips"] = (g["flips"] or 0) + sign * row["verdict_flip_count"]
    g["verdicts"] = (g["verdicts"] or 0) + sign * row["overridable_count"]


def _review_groups(rs: RunScorer, scale: float) -> list[dict[str, Any]]:
    """Reviewed or overridden ok results of `rs` (only those count), grouped by
    everything the aggregates distinguish, with their override, flip and
    overridable-value counts: from the cache for the current review version, else
    counted (the partial index review_result_touched_idx holds just these rows)."""
    version = _review_version(rs)
    key = review_groups_key(rs.pk, rs.options, version)
    cached: list[dict[str, Any]] | None = cache_get(key)
    if cached is not None:
        return cached
    groups = list(
        Result.objects.filter(run_scorer_id=rs.pk, status=Result.Status.OK)
        .filter(Q(reviewed=True) | Q(overridden=True))
        .annotate(
            judge_bin=ScoreBin("judge_score", scale),
            final_bin=ScoreBin("final_score", scale),
        )
        .values(*GROUP_FIELDS, "judge_bin", "final_bin")
        .annotate(
            n=Count("run_scorer"),
            judge_sum=Sum("judge_score"),
            final_sum=Sum("final_score"),
            judge_count=Count("judge_score"),
            final_count=Count("final_score"),
            active=Sum("active_override_count"),
            flips=Sum("verdict_flip_count"),
            verdicts=Sum("overridable_count"),
        )
        .order_by()
    )
    # Stored only if no review write committed while we counted.
    if _review_version_now(rs.pk) == version:
        cache_set(key, groups)
    return groups


def _fold_groups(
    agg: ScorerAggregate,
    judge_groups: Iterable[Mapping[str, Any]],
    review_groups: Iterable[Mapping[str, Any]],
) -> None:
    """Fill `agg` from the judge side (every result) and the review side (reviewed or
    overridden ok results), a few dozen groups in all.

    A result without an active override has final = judge (score, pass, bin), so the
    final numbers are the judge's with the overridden results' judge values swapped
    for their final ones. Judge groups: status, judge_passed, judge_bin, n, judge_sum, judge_count. Review
    groups: the GROUP_FIELDS, judge_bin / final_bin, n, judge_sum / final_sum,
    judge_count / final_count, and (from SQL) active /
    flips / verdicts, the override, verdict flip and overridable-value counts. Means
    and pass rates are over ok results; human numbers over reviewed ok ones.
    """
    assert agg.histogram is not None
    judge_sum, judge_cnt, judge_n, judge_pass = 0.0, 0, 0, 0
    for g in judge_groups:
        n, status = g["n"], g["status"]
        agg.total += n
        if status == Result.Status.ERROR:
            agg.errors += n
            continue
        if status == Result.Status.PENDING:
            agg.pending += n
            continue
        if status != Result.Status.OK:
            agg.cancelled += n
            continue
        agg.ok += n
        judge_sum += g["judge_sum"] or 0.0
        judge_cnt += g["judge_count"]
        if g["judge_passed"] is not None:
            judge_n += n
            judge_pass += n if g["judge_passed"] else 0
        if g["judge_bin"] is not None:
            agg.histogram.judge[g["judge_bin"]] += n
    agg.histogram.final = list(agg.histogram.judge)
    final_terms, final_cnt = [judge_sum], judge_cnt
    final_n, final_pass = judge_n, judge_pass
    human = {"sum": 0.0, "cnt": 0, "rsum": 0.0, "rcnt": 0}
    matrix = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for g in review_groups:
        n, judge_passed, final_passed = g["n"], g["judge_passed"], g["final_passed"]
        agg.active_overrides += g.get("active") or 0
        agg.verdict_flips += g.get("flips") or 0
        if g["overridden"]:
            agg.overridden += n
            final_terms += [-(g["judge_sum"] or 0.0), g["final_sum"] or 0.0]
            final_cnt += g["final_count"] - g["judge_count"]
            final_n += (final_passed is not None) * n - (judge_passed is not None) * n
            final_pass += (n if final_passed else 0) - (n if judge_passed else 0)
            if g["judge_bin"] is not None:
                agg.histogram.final[g["judge_bin"]] -= n
            if g["final_bin"] is not None:
                agg.histogram.final[g["final_bin"]] += n
        if g["reviewed"]:
            agg.reviewed += n
            agg.verdict_total += g.get("verdicts") or 0
            human["sum"] += g["final_sum"] or 0.0
            human["cnt"] += g["final_count"]
            human["rsum"] += g["judge_sum"] or 0.0
            human["rcnt"] += g["judge_count"]
            if judge_passed is not None and final_passed is not None:
                matrix[_MATRIX_CELL[judge_passed, final_passed]] += n
    agg.judge_mean = judge_sum / judge_cnt if judge_cnt else None
    # Rounded: review sums are carried from version to version by adding and taking
    # away scores, which leaves float residue (1e-17) a recount would not have.
    agg.final_mean = (
        round(math.fsum(final_terms) / final_cnt, 12) if final_cnt else None
    )
    agg.human_mean = round(human["sum"] / human["cnt"], 12) if human["cnt"] else None
    agg.reviewed_judge_mean = (
        round(human["rsum"] / human["rcnt"], 12) if human["rcnt"] else None
    )
    agg.judge_pass_rate = _ratio(judge_pass, judge_n)
    agg.final_pass_rate = _ratio(final_pass, final_n)
    agg.agreement = _agreement(matrix)
    agg.human_pass_rate = _ratio(matrix["tp"] + matrix["fn"], agg.agreement.n)
    agg.reviewed_judge_pass_rate = _ratio(matrix["tp"] + matrix["fp"], agg.agreement.n)


def run_aggregates(
    *, run_id: int, run_scorer_id: int | None = None
) -> list[ScorerAggregate]:
    """One `ScorerAggregate` per RunScorer of the run (or only `run_scorer_id`).

    Per scorer, two grouped queries of a few dozen rows each: the judge side (every
    result by status, judge pass and judge bin, with the error messages; cached once
    the run is finished, see `_judge_groups_key`) and the review side (only reviewed or
    overridden ok results, with their override, flip and overridable-value counts).
    Every number is folded from them, so an override costs a read of
    the touched results, not a scan of the run. Reads committed final_* fields, so a
    caller that just ran a review service sees its own change.
    """

    def build(v: Mapping[str, int]) -> QuerySet[RunScorer]:
        scorers = (
            RunScorer.objects.filter(run_id=v["run"])
            .select_related("run", "review_version")
            .only(
                "id",
                "run_id",
                "scorer_id",
                "name",
                "kind",
                "options",
                "position",
                "run__status",
                "run__finished_at",
                "review_version__version",
            )
            .order_by("position", "id")
        )
        if "run_scorer" in v:
            scorers = scorers.filter(pk=v["run_scorer"])
        return scorers

    values = {"run": run_id}
    if run_scorer_id is not None:
        values["run_scorer"] = run_scorer_id
    # Compiled once: 1-2 ms of CPU of every override and answer that returns the
    # aggregates (bench_million's 3rd answer via the queue card).
    out: list[ScorerAggregate] = []
    for rs in compiled_once(("run_aggregates", run_scorer_id is None), build, values):
        agg = _scorer_stub(rs)
        judge = _judge_groups(rs, agg.scale)
        _fold_groups(agg, judge.groups, _review_groups(rs, agg.scale))
        if agg.errors:
            agg.error_reasons = judge.error_reasons
        agg.moved = moved_sentence(agg)
        out.append(agg)
    return out


def _add_to_judge_group(
    groups: dict[tuple[Any, ...], dict[str, Any]], row: Mapping[str, Any], scale: float
) -> None:
    """Count one row into its judge-side group, like the SQL GROUP BY (n / judge_sum / judge_count)."""
    judge_score = row["judge_score"]
    fields = {f: row[f] for f in _JUDGE_GROUP_FIELDS}
    fields["judge_bin"] = None if judge_score is None else bin_of(judge_score, scale)
    g = groups.setdefault(
        tuple(fields.values()), {**fields, "n": 0, "judge_sum": 0.0, "judge_count": 0}
    )
    g["n"] += 1
    if judge_score is not None:
        g["judge_sum"] += judge_score
        g["judge_count"] += 1


def aggregate_rows(
    *,
    run_scorer: RunScorer,
    rows: Iterable[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> ScorerAggregate:
    """The `run_aggregates` numbers computed in Python from rows (rescore preview).

    Rows are grouped exactly like the SQL queries (the review side by the same
    `_shift_group` that carries the cache from version to version), then folded by the
    same code, so the two cannot drift apart. Each row has: status, error,
    judge_score, judge_passed, final_score, final_passed, reviewed, overridden and the
    result's overridable_count, active_override_count and verdict_flip_count.
    `options` replaces the run scorer's options (scale/threshold of the preview).
    """
    stub_rs = RunScorer(
        pk=run_scorer.pk,
        name=run_scorer.name,
        kind=run_scorer.kind,
        scorer_id=run_scorer.scorer_id,
        options=options if options is not None else run_scorer.options,
    )
    agg = _scorer_stub(stub_rs)
    judge_groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    review_groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    errors: dict[str, int] = {}
    for row in rows:
        _add_to_judge_group(judge_groups, row, agg.scale)
        counted = review_row_of(row)
        if counted is not None:
            shift_group(review_groups, counted, agg.scale, 1)
        if row["status"] == Result.Status.ERROR:
            msg = row.get("error") or "(no message)"
            errors[msg] = errors.get(msg, 0) + 1
    _fold_groups(agg, judge_groups.values(), review_groups.values())
    agg.error_reasons = sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    agg.moved = moved_sentence(agg)
    return agg
