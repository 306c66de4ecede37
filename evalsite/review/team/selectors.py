"""Overlap review reads: who answered what (and who may see it), progress per
reviewer, the adjudication queue, and agreement between humans."""

from __future__ import annotations

import hashlib
import json
import statistics
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar, cast

from django.contrib.auth.models import User
from django.db.models import (
    Case,
    Count,
    F,
    JSONField,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import JSONObject
from django.utils import timezone

from evalsite.evals.models import Result, RunScorer
from evalsite.evals.results.aggregates import cache_get, cache_set
from evalsite.evals.results.labels import path_label, path_value_label
from evalsite.lib.db import compiled_once
from evalsite.review.models import Guideline, QueueEntry, Review, ReviewQueue
from evalsite.review.queues.selectors import overridable_values_read
from scoring.agreement import (
    Agreement,
    agreement_alpha,
    agreement_alpha_grouped,
    agreement_kappa_pairs,
    agreement_percent_grouped,
    binary_agreement_from_counts,
)

T = TypeVar("T")

# Bootstrap resamples behind each interval on the agreement page. 200 keep the ends of
# a 95 % interval within about ±0.02 of a 2,000-resample run; they are cached until a
# review write on the run (see `ReviewState`).
RESAMPLES = 200


def entry_answers(*, queue: ReviewQueue, result_id: int) -> list[Review]:
    def build(v: Mapping[str, int]) -> QuerySet[Review]:
        return (
            Review.objects.filter(queue_id=v["queue"], result_id=v["result"])
            .select_related("reviewer", "guideline")
            .order_by("kind", "created_at", "id")
        )

    # Compiled once (see `answer_target`): 1-2 ms of CPU of every answer.
    return compiled_once(
        "entry_answers", build, {"queue": queue.pk, "result": result_id}
    )


def _latest_guideline(*, project_id: int, queue_id: int | None) -> Subquery:
    """The latest guideline version of one scope (the queue's own, or the
    project's) as {"id", "version", "body"}, for an annotation."""
    versions = Guideline.objects.filter(project_id=project_id)
    if queue_id is None:
        versions = versions.filter(queue__isnull=True)
    else:
        versions = versions.filter(queue_id=queue_id)
    latest = versions.order_by("-version").values(
        latest=JSONObject(id="id", version="version", body="body")
    )[:1]
    return Subquery(latest, output_field=JSONField())


def _guideline_pick(
    *, project_id: int, queue_id: int, own: Any, project_wide: Any
) -> Guideline | None:
    """`selectors.guidelines.guideline_current`'s rule on the two latest versions:
    the queue's unless its text is empty, else the project's unless empty."""
    for latest, scope in ((own, queue_id), (project_wide, None)):
        if isinstance(latest, str):  # a JSON text where the driver does not decode it
            latest = json.loads(latest)
        if latest and str(latest["body"]).strip():
            guideline = Guideline(
                id=latest["id"],
                project_id=project_id,
                queue_id=scope,
                version=latest["version"],
                body=latest["body"],
            )
            guideline._state.adding = False
            return guideline
    return None


def guideline_in_force(*, project_id: int, queue_id: int) -> Guideline | None:
    """What `selectors.guidelines.guideline_current` returns for a queue, in one read
    (the queue's row with both latest versions as subqueries) instead of two. Each
    answer records it (the guideline's id and version, no more: created_by and
    created_at are not read)."""
    row = (
        ReviewQueue.objects.filter(pk=queue_id)
        .annotate(
            guideline_own=_latest_guideline(project_id=project_id, queue_id=queue_id),
            guideline_project=_latest_guideline(project_id=project_id, queue_id=None),
        )
        .values_list("guideline_own", "guideline_project")
        .first()
    )
    if row is None:
        return None
    return _guideline_pick(
        project_id=project_id, queue_id=queue_id, own=row[0], project_wide=row[1]
    )


@dataclass
class AnswerTarget:
    """What an answer needs read before the result is locked: the entry with its
    result (and the result's run and item), and the guidelines in force."""

    entry: QueueEntry
    guideline: Guideline | None


def answer_target(
    *, queue: ReviewQueue, position: int, full: bool = False
) -> AnswerTarget | None:
    """The entry at `position` for an answer, with its result, the result's run and
    item and the guidelines in force, all in one read (the queue was checked for
    the user; its entries' results are of its run, checked again here). None when
    there is no such entry.

    full=False reads only what the answer needs before its lock (the run's project
    and the item's number, for the audit); full=True the whole result, its run
    scorer and item too, for the card drawn after the answer.

    The entry, the result with a second membership read, and the two guideline
    reads it replaces were 5 of the API answer's 30 queries (bench database)."""

    def build(v: Mapping[str, int]) -> QuerySet[QueueEntry]:
        query = QueueEntry.objects.filter(
            queue_id=v["queue"], position=v["position"]
        ).annotate(
            guideline_own=_latest_guideline(
                project_id=v["project"], queue_id=v["queue"]
            ),
            guideline_project=_latest_guideline(project_id=v["project"], queue_id=None),
        )
        if full:
            query = query.select_related(
                "result__run", "result__item", "result__run_scorer"
            )
        else:
            query = query.select_related("result__run", "result__item").only(
                *(f.name for f in QueueEntry._meta.concrete_fields),
                "result__run_id",
                "result__item_id",
                "result__run_scorer_id",
                "result__run__project_id",
                "result__item__index",
            )
        # [:1] with the model's ordering: what .first() reads.
        return query[:1]

    # Compiled once: building and compiling the entry's joins and the two
    # guideline subqueries took 3-4 ms of CPU of every answer (8.6 of 11.2 ms at
    # load 16; bench_million's 3rd answer).
    found = compiled_once(
        ("answer_target", full),
        build,
        {"queue": queue.pk, "position": position, "project": queue.project_id},
    )
    entry = found[0] if found else None
    if entry is None or entry.result.run.project_id != queue.project_id:
        return None
    # The membership checked with the queue serves the audit's project.
    entry.result.run.project = queue.project
    guideline = _guideline_pick(
        project_id=queue.project_id,
        queue_id=queue.pk,
        own=entry.guideline_own,
        project_wide=entry.guideline_project,
    )
    return AnswerTarget(entry=entry, guideline=guideline)


def answers_visible(
    *, entry: QueueEntry, answers: Iterable[Review], user: User
) -> bool:
    """Blind overlap: a reviewer sees the others' answers only once they have answered
    themselves, or once the result left the answering stage (decided or waiting for
    an adjudicator)."""
    if entry.state != QueueEntry.State.OPEN:
        return True
    return any(
        r.reviewer_id == user.pk and r.kind == Review.Kind.ANSWER for r in answers
    )


def overlap_counts(*, queue_id: int) -> tuple[dict[str, int], dict[str, Any]]:
    """The card's progress (entries in the queue, decided, waiting for adjudication)
    and the queue's pass/fail agreement (see `queue_pass_agreement`), from one grouped
    read of the queue's entries by (state, pass answers, fail answers): at most 3 x 66
    rows, an index-only scan of review_entry_shape_idx. COUNT(*), not COUNT(id): the
    id is not in the index, and counting it read every entry's row (bench_million's
    50k-entry queue: 30 ms, a sequential scan, where the index-only scan takes 12 ms
    at load average 6-8)."""

    def build(v: Mapping[str, int]) -> QuerySet[Any]:
        return (
            QueueEntry.objects.filter(queue_id=v["queue"])
            .values_list("state", "answers_pass", "answers_fail")
            .annotate(n=Count("*"))
            .order_by()
        )

    # Compiled once (see `answer_target`): about 1 ms of CPU of every answer.
    rows = compiled_once("overlap_counts", build, {"queue": queue_id})
    progress = {"total": 0, "decided": 0, "adjudicate": 0}
    histogram: dict[tuple[int, int], int] = defaultdict(int)
    for state, yes, no, n in rows:
        progress["total"] += n
        if state in (QueueEntry.State.DECIDED, QueueEntry.State.ADJUDICATE):
            progress[state] += n
        histogram[(int(yes), int(no))] += int(n)
    return progress, _agreement_from_histogram(histogram)


def overlap_next_for(*, queue: ReviewQueue, user: User, after: int = 0) -> int | None:
    """Position of the next entry still taking answers that `user` has not answered
    (after `after`, wrapping to the start)."""
    answered = Review.objects.filter(
        queue=queue, reviewer=user, kind=Review.Kind.ANSWER
    ).values("result_id")
    entries = QueueEntry.objects.filter(
        queue=queue, state=QueueEntry.State.OPEN
    ).exclude(result_id__in=answered)
    later = entries.filter(position__gt=after).order_by("position")
    position = later.values_list("position", flat=True).first()
    if position is None:
        position = (
            entries.order_by("position").values_list("position", flat=True).first()
        )
    return position


def adjudication_entries(*, project_id: int) -> QuerySet[QueueEntry]:
    """Results whose reviewers disagreed, oldest queue first."""
    return (
        QueueEntry.objects.filter(
            queue__project_id=project_id, state=QueueEntry.State.ADJUDICATE
        )
        .select_related("queue", "result__item", "result__run_scorer")
        .order_by("queue_id", "position")
    )


def queue_pass_agreement(*, queue_id: int) -> dict[str, Any]:
    """Pass/fail agreement of a queue's reviewers: percent, Krippendorff's alpha
    (nominal) and the items behind them, from the queue's entries grouped by their
    (pass, fail) answer counts (see scoring.agreement.binary_agreement_from_counts and
    `overlap_counts`). Cheap enough to send back with every answer."""
    return overlap_counts(queue_id=queue_id)[1]


def _agreement_from_histogram(histogram: dict[tuple[int, int], int]) -> dict[str, Any]:
    percent, alpha, items = binary_agreement_from_counts(histogram)
    return {"percent": percent, "alpha": alpha, "items": items}


@dataclass
class ReviewerStats:
    username: str
    answered: int = 0
    median_seconds: float | None = None
    with_final: float | None = None
    with_final_items: int = 0
    with_judge: float | None = None
    with_judge_items: int = 0


@dataclass
class AgreementReport:
    """Agreement between humans on one scope (a queue, or a run scorer across its
    queues): each figure with the items behind it and a 95 % bootstrap interval."""

    reviewers: int
    percent: Agreement
    alpha_pass: Agreement
    alpha_verdicts: Agreement
    alpha_score: Agreement
    kappa_pairs: list[tuple[str, str, Agreement]] = field(default_factory=list)
    per_reviewer: list[ReviewerStats] = field(default_factory=list)
    # Set only when asked with allow_stale: these are the figures of an earlier
    # state, as of this time (a recount of the current one is on its way).
    as_of: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        def fig(a: Agreement) -> dict[str, Any]:
            return {
                "value": a.value,
                "items": a.items,
                "ci_low": a.ci_low,
                "ci_high": a.ci_high,
            }

        return {
            "reviewers": self.reviewers,
            "percent_agreement": fig(self.percent),
            "alpha_pass": fig(self.alpha_pass),
            "alpha_verdicts": fig(self.alpha_verdicts),
            "alpha_score": fig(self.alpha_score),
            "kappa_pairs": [
                {"reviewers": [a, b], **fig(k)} for a, b, k in self.kappa_pairs
            ],
            "per_reviewer": [s.__dict__ for s in self.per_reviewer],
        }


def _answers(scope: Q) -> QuerySet[Review]:
    return Review.objects.filter(scope, kind=Review.Kind.ANSWER, reviewer__isnull=False)


@dataclass(frozen=True)
class ReviewState:
    """What the agreement figures of a run's scopes are computed from, by its
    counters: the review version of each run scorer, which every review write on its
    results bumps in the write's transaction (overrides, accepts, undo, and the
    team-review answers, withdrawals and adjudications with the entries they decide:
    evals.results.verdicts.result_reviewing with touched=True, review_version_touch);
    each scorer's options (a saved rescore rewrites judge and final verdicts without
    a review write); the run's status and finish time (judge writes); and the run's
    queues (deleting one takes its answers). Equal states mean equal figures, so
    figures cached under a state are a recount of it.

    Read in two small queries, where the fingerprint of the answers it replaces
    (their count, newest id and change, the sum of their results' versions) joined
    every answer to its result: 1.5-2.3 s per scope on bench_million's 150k answers
    (load average 12), six scopes on the agreement page."""

    run: tuple[str, str]
    queues: tuple[int, ...]
    scorers: tuple[tuple[int, str, int], ...]  # (run scorer, options digest, version)
    # When it was read (before its queries): the figures of this state count every
    # review write committed by then. Not part of the state.
    read_at: datetime = field(default_factory=timezone.now, compare=False)

    def key(self, prefix: str, run_scorer_ids: Iterable[int] | None = None) -> str:
        """The cache key of a figure of the scope `prefix` that reads the answers on
        the results of `run_scorer_ids` (None: every scorer of the run)."""
        wanted = None if run_scorer_ids is None else set(run_scorer_ids)
        scorers = [s for s in self.scorers if wanted is None or s[0] in wanted]
        state = json.dumps([self.run, self.queues, scorers])
        digest = hashlib.sha256(state.encode()).hexdigest()[:24]
        return f"agreement:v3:{prefix}:{digest}"


def review_state(*, run_id: int) -> ReviewState:
    read_at = timezone.now()
    run: tuple[str, str] = ("", "")
    scorers = []
    for pk, options, version, status, finished_at in (
        RunScorer.objects.filter(run_id=run_id)
        .order_by("pk")
        .values_list(
            "pk",
            "options",
            "review_version__version",
            "run__status",
            "run__finished_at",
        )
    ):
        run = (status, finished_at.isoformat() if finished_at else "")
        digest = hashlib.sha256(
            json.dumps(options or {}, sort_keys=True, default=str).encode()
        ).hexdigest()[:16]
        scorers.append((pk, digest, version or 0))
    queues = tuple(
        ReviewQueue.objects.filter(run_id=run_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return ReviewState(run=run, queues=queues, scorers=tuple(scorers), read_at=read_at)


def _latest_key(key: str) -> str:
    """`agreement:v3:<prefix>:<state digest>` -> `agreement:v3:latest:<prefix>`: the
    latest figures of the scope, whatever state they were counted for."""
    scope = key.rsplit(":", 1)[0].removeprefix("agreement:v3:")
    return f"agreement:v3:latest:{scope}"


def cached_by_state(
    *,
    run_id: int,
    key: str,
    state: ReviewState,
    compute: Callable[[], T],
    allow_stale: bool = False,
) -> tuple[T, datetime | None]:
    """`compute()` cached under `key` (made from `state`), and the time it is as of:
    None for the figures of `state`. Stored only when the state is still the same
    after computing: a write that committed meanwhile may have been read in part,
    and its own state names another key. (Inside a snapshot, as the background
    recount reads, the state read again is the snapshot's, so it is stored: the
    figures are an exact recount of the state the key names.)

    Each store also keeps the scope's latest figures with their state. With
    `allow_stale` (the agreement page only), when the figures of `state` are not
    cached yet those latest ones come back instead, with the time they are as of,
    rather than a recount (4.8 s on bench_million's 150k answers): the caller
    shows them marked and has them recounted in the background."""
    cached = cache_get(key)
    if cached is not None:
        return cast(T, cached), None
    latest_key = _latest_key(key)
    if allow_stale:
        latest = cache_get(latest_key)
        if latest is not None:
            latest_state_key, value, as_of = latest
            return cast(T, value), None if latest_state_key == key else as_of
    value = compute()
    if review_state(run_id=run_id) == state:
        cache_set(key, value)
        # Never replaced by older figures (a slow recount finishing after a newer
        # one). Read then written, not atomic: two stores racing can leave the
        # older, still marked with its own time, until the next store.
        latest = cache_get(latest_key)
        if latest is None or latest[2] <= state.read_at:
            cache_set(latest_key, (key, value, state.read_at))
    return value, None


def agreement_report(
    *,
    queue: ReviewQueue | None = None,
    run_scorer: RunScorer | None = None,
    state: ReviewState | None = None,
    allow_stale: bool = False,
) -> AgreementReport:
    """Agreement over a queue's answers, or over every queue's answers on a run
    scorer's results (a reviewer's latest answer per result). Cached by the run's
    review state (`state` when the caller read it already). Exact unless
    `allow_stale` (the agreement page): then perhaps the figures of an earlier
    state, with `as_of` set (see `cached_by_state`)."""
    if (queue is None) == (run_scorer is None):
        raise ValueError("give a queue or a run scorer")
    if queue is not None:
        scope = Q(queue=queue)
        run_id = queue.run_id
        prefix = f"q{queue.pk}"
        run_scorer_ids: list[int] | None = (
            None  # its results' answers decide elsewhere too
        )
    else:
        assert run_scorer is not None
        scope = Q(result__run_scorer=run_scorer)
        run_id = run_scorer.run_id
        prefix = f"rs{run_scorer.pk}"
        run_scorer_ids = [run_scorer.pk]
    current = state if state is not None else review_state(run_id=run_id)
    report, as_of = cached_by_state(
        run_id=run_id,
        key=current.key(prefix, run_scorer_ids),
        state=current,
        compute=lambda: _agreement_report(_answers(scope), state=current),
        allow_stale=allow_stale,
    )
    return report if as_of is None else replace(report, as_of=as_of)


def _agreement_report(
    answers: QuerySet[Review], *, state: ReviewState
) -> AgreementReport:
    """The report, from one read of the answers (in order, so the latest of each
    reviewer on each result wins: a result can sit in two queues of the same run),
    one of their results' verdicts and the judges' verdict values of the results two
    or more reviewers answered (`_judge_fields`, cached by the judges' state).

    Uncached, bench_million's 50k-result overlap-3 queue (150k answers, 215k verdict
    units) took 26.2 s with model instances and 7.8 s with plain rows (load 7-8);
    measured again here, 9.6 s for the queue and 10.8 s for its scorer (load 5-6).
    Now 2.9-4.3 s each (same load, the figures equal): the judges' verdict values
    come from `_judge_fields`' cache instead of a read of every answered result's
    analysis after each answer (1.1-1.6 s of SQL and as much decoding), the results'
    verdicts from review_result_id_verdicts_idx (1.0 s of heap reads before), and
    the verdict units are counted by shape as they are read instead of built as a
    215k-unit ratings map for scoring.agreement to group again."""
    latest: dict[tuple[int, int], tuple[Any, ...]] = {}
    # The flips only where there are some: most answers change no verdict, and
    # decoding their "{}" was most of reading bench_million's 150k answers (2.1-2.4 s,
    # now 0.75-0.95 s, load average 8).
    changed = Case(When(flips={}, then=Value(None)), default=F("flips"))
    for result_id, reviewer_id, *answer in (
        answers.order_by("created_at", "id")
        .annotate(changed=changed)
        .values_list(
            "result_id", "reviewer_id", "passed", "changed", "score", "seconds"
        )
    ):
        latest[(result_id, reviewer_id)] = tuple(answer)
    names = dict(
        User.objects.filter(pk__in={r for _, r in latest}).values_list("pk", "username")
    )
    pass_ratings: dict[Hashable, dict[Hashable, Hashable | float]] = defaultdict(dict)
    score_ratings: dict[Hashable, dict[Hashable, Hashable | float]] = defaultdict(dict)
    flips_by: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    seconds_by: dict[str, list[float]] = defaultdict(list)
    mine_by: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    for (result_id, reviewer_id), (passed, flips, score, seconds) in latest.items():
        username = names[reviewer_id]
        if passed is not None:
            pass_ratings[result_id][username] = passed
        if score is not None:
            score_ratings[result_id][username] = float(score)
        flips_by[result_id][username] = flips or {}
        if seconds is not None:
            seconds_by[username].append(float(seconds))
        mine_by[username].append((result_id, passed))
    answered = answers.values("result_id")
    judge_passed: dict[int, bool | None] = {}
    final_passed: dict[int, bool | None] = {}
    shared_by_scorer: dict[int, list[int]] = defaultdict(list)
    for result_id, run_scorer_id, judged, final in Result.objects.filter(
        pk__in=answered
    ).values_list("id", "run_scorer_id", "judge_passed", "final_passed"):
        judge_passed[result_id], final_passed[result_id] = judged, final
        if len(flips_by.get(result_id, ())) >= 2:
            shared_by_scorer[run_scorer_id].append(result_id)
    # One unit per (result, verdict) of the results two or more reviewers answered,
    # counted by its shape (its values, sorted as scoring.agreement groups them).
    verdicts: Counter[tuple[Hashable, ...]] = Counter()
    for run_scorer_id, result_ids in shared_by_scorer.items():
        fields_of = _judge_fields(
            run_scorer_id=run_scorer_id, result_ids=result_ids, state=state
        )
        for result_id in result_ids:
            _count_verdict_units(
                verdicts, fields_of.get(result_id, ()), flips_by[result_id]
            )
    decided = set(
        QueueEntry.objects.filter(
            result_id__in=answered, state=QueueEntry.State.DECIDED
        ).values_list("result_id", flat=True)
    )
    stats = []
    for username in sorted(mine_by):
        mine = mine_by[username]
        final_pairs = [
            (passed, final_passed[rid])
            for rid, passed in mine
            if passed is not None and rid in decided
        ]
        judge_pairs = [
            (passed, judge_passed[rid])
            for rid, passed in mine
            if passed is not None and judge_passed[rid] is not None
        ]
        times = seconds_by.get(username, [])
        stats.append(
            ReviewerStats(
                username=username,
                answered=len(mine),
                median_seconds=statistics.median(times) if times else None,
                with_final=_share(final_pairs),
                with_final_items=len(final_pairs),
                with_judge=_share(judge_pairs),
                with_judge_items=len(judge_pairs),
            )
        )
    kappa = agreement_kappa_pairs(pass_ratings, resamples=RESAMPLES)
    pass_shapes = Counter(tuple(by.values()) for by in pass_ratings.values())
    return AgreementReport(
        reviewers=len(mine_by),
        percent=agreement_percent_grouped(pass_shapes, resamples=RESAMPLES),
        alpha_pass=agreement_alpha_grouped(pass_shapes, "nominal", resamples=RESAMPLES),
        alpha_verdicts=agreement_alpha_grouped(
            verdicts, "nominal", resamples=RESAMPLES
        ),
        alpha_score=agreement_alpha(score_ratings, "interval", resamples=RESAMPLES),
        kappa_pairs=[(str(a), str(b), k) for (a, b), k in sorted(kappa.items())],
        per_reviewer=stats,
    )


JudgeFields = dict[int, list[tuple[str, Hashable]]]


def _judge_fields(
    *, run_scorer_id: int, result_ids: list[int], state: ReviewState
) -> JudgeFields:
    """The judge's verdict values (path, normalised value) of each of `result_ids`
    (results of one run scorer), from a cache of the scorer's answered results kept
    by what the judge's analyses are a function of: the run's status and finish time
    (judge writes) and the scorer's options (a saved rescore), as `ReviewState` has
    them, but not the review version: a review never changes the judge's analysis.
    Results not cached yet (answered since) are read and added.

    Before, every answer made the agreement page read every answered result's values
    again: 1.1-1.6 s of SQL per scope and as much decoding for bench_million's 50k
    answered results (load 5-6), twice (its queue and its scorer)."""
    key = _judge_fields_key(run_scorer_id, state=state)
    # Cached as the results' ids by their values (a few hundred distinct lists of
    # verdicts, an array of ids each): a map of 50k results to their lists took
    # 0.5 s to unpickle, this a few ms.
    cached: dict[tuple[tuple[str, Hashable], ...], array[int]] | None = (
        cache_get(key) if key else None
    )
    fields: JudgeFields = {}
    for shape, ids in (cached or {}).items():
        listed = list(shape)
        for result_id in ids:
            fields[result_id] = listed
    missing = [rid for rid in result_ids if rid not in fields]
    if missing:
        results = Result.objects.filter(run_scorer_id=run_scorer_id)
        # Many ids: a semi-join of the scorer's answered results reads no IN list.
        if len(missing) > 1000:
            results = results.filter(
                pk__in=Review.objects.filter(kind=Review.Kind.ANSWER).values(
                    "result_id"
                )
            )
        else:
            results = results.filter(pk__in=missing)
        for result_id, _judged, _final, values in overridable_values_read(
            results, limit=10_000
        ):
            fields[result_id] = [(path, _normal(value)) for path, value in values]
        # Stored only if the judges' state is still the one read before: a judge
        # write that committed meanwhile names another key.
        if key and key == _judge_fields_key(run_scorer_id):
            grouped: dict[tuple[tuple[str, Hashable], ...], array[int]] = {}
            for result_id, listed in fields.items():
                grouped.setdefault(tuple(listed), array("q")).append(result_id)
            cache_set(key, grouped)
    return fields


def _judge_fields_key(
    run_scorer_id: int, *, state: ReviewState | None = None
) -> str | None:
    """The cache key of `_judge_fields` (from `state`, else read now); None while the
    run is unfinished: its judges still write analyses with no change of state."""
    if state is None:
        state = review_state(run_id=RunScorer.objects.get(pk=run_scorer_id).run_id)
    options = next((s[1] for s in state.scorers if s[0] == run_scorer_id), None)
    if options is None or not state.run[1]:
        return None
    digest = hashlib.sha256(json.dumps([state.run, options]).encode()).hexdigest()
    return f"agreement:judge-fields:v2:{run_scorer_id}:{digest[:24]}"


def _count_verdict_units(
    verdicts: Counter[tuple[Hashable, ...]],
    fields: Iterable[tuple[str, Hashable]],
    by_reviewer: dict[str, dict[str, Any]],
) -> None:
    """One unit per verdict of one result: each reviewer's value is the one they set,
    or the judge's when they left it alone, so agreeing with the judge counts too."""
    if not any(by_reviewer.values()):
        m = len(by_reviewer)
        for _path, judged in fields:
            verdicts[(judged,) * m] += 1
        return
    for path, judged in fields:
        values = [
            _normal(flips[path]) if path in flips else judged
            for flips in by_reviewer.values()
        ]
        verdicts[tuple(sorted(values, key=repr))] += 1


def _share(pairs: list[tuple[Any, Any]]) -> float | None:
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else None


def _normal(value: Any) -> Hashable:
    if isinstance(value, str):
        return value.strip().lower()
    return value if isinstance(value, Hashable) else str(value)


def describe_flips(
    *, kind: str, analysis: dict[str, Any] | None, flips: dict[str, Any]
) -> list[str]:
    """A reviewer's changed verdicts in words, numbered from 1 like the card's keys:
    "verdict 3: unsupported"."""
    return [
        f"{path_label(path)}: {path_value_label(kind, path, value)}"
        for path, value in sorted(flips.items(), key=lambda kv: _path_order(kv[0]))
    ]


def _path_order(path: str) -> tuple[int, str]:
    parts = path.split(".")
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else -1, path)
