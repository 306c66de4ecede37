"""Reads for the results explorer, review queues, comments and audit pages (helper D2).

`results_filter` is the one place result filtering lives: the explorer page, the
results API, queue building and the export all call it with the same filter dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, F, Q, QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.datasets.selectors import items_matching
from evalsite.evals.models import Result, Run
from evalsite.lib.text import text_check_storable
from evalsite.review.models import AuditEvent, Comment
from evalsite.review.models_queue import QueueEntry, ReviewQueue
from scoring import KINDS, AnalysisError, get_path

User = AbstractBaseUser | AnonymousUser


class ResultFilters(TypedDict, total=False):
    """Cleaned filters; every key optional (absent or None = no constraint)."""

    scorer: int | None  # RunScorer id
    judge_passed: bool | None
    final_passed: bool | None
    min_score: float | None  # on the final score
    max_score: float | None
    reviewed: bool | None
    overridden: bool | None
    status: str | None  # Result.Status value
    mine: bool  # assigned to the requesting user
    assignee: int | None  # assigned to this user id
    disagree: bool  # final verdict differs from the judge's (or any active override)
    q: str  # text search in the item's input and output
    sort: str  # a key of SORTS


# Sort key -> ORDER BY, on Result columns only so an index can serve it without a join.
# "item" orders by item id: a dataset's items are inserted in file order in one
# transaction (datasets.services._insert_items), so item ids increase with the index,
# and the unique (run, item, run_scorer) index answers it with no sort at all (it leads
# with run_id: see RUN_RANGE_SORTS). Every ordering ends in a unique column so pages
# never overlap.
SORTS: dict[str, tuple[Any, ...]] = {
    "item": ("run_id", "item_id", "run_scorer_id"),
    "-item": ("-run_id", "-item_id", "-run_scorer_id"),
    "score": (F("judge_score").asc(nulls_last=True), "id"),
    "-score": (F("judge_score").desc(nulls_last=True), "id"),
    "final": (F("final_score").asc(nulls_last=True), "id"),
    "-final": (F("final_score").desc(nulls_last=True), "id"),
    "updated": ("updated_at", "id"),
    "-updated": ("-updated_at", "-id"),
}
SORT_LABELS = {
    "item": "Item index ↑",
    "-item": "Item index ↓",
    "score": "Judge score ↑",
    "-score": "Judge score ↓",
    "final": "Final score ↑",
    "-final": "Final score ↓",
    "updated": "Updated ↑",
    "-updated": "Updated ↓",
}
DEFAULT_SORT = "item"
# Sorts whose run is filtered as a one-value range (r <= run_id <= r), not run_id = r.
# With `=` Postgres treats run_id as a constant and drops it from the ORDER BY; then
# the single-column item_id index (the FK's) looks presorted too, and with a LIMIT the
# planner walks it from the lowest item id, filtering out every other run's results
# first (200k rows, ~100 ms, once a database holds older runs). With the range, run_id
# stays a sort key and only the unique (run, item, run_scorer) index supplies the order.
RUN_RANGE_SORTS = frozenset({"item", "-item"})
Q_MAX_LENGTH = 200


def results_filter(*, run: Run, params: ResultFilters, user: User) -> QuerySet[Result]:
    """The run's results matching `params`, sorted, with the columns the lists show.

    Filters map onto indexed columns of Result (run, run_scorer, status, final_passed,
    assignee); text search matches the item's input and output, through one trigram
    index on Postgres (datasets.selectors.ItemSearchText).
    """
    sort = params.get("sort") or DEFAULT_SORT
    if sort not in SORTS:
        sort = DEFAULT_SORT
    if sort in RUN_RANGE_SORTS:
        qs = Result.objects.filter(run_id__gte=run.pk, run_id__lte=run.pk)
    else:
        qs = Result.objects.filter(run=run)
    if params.get("scorer") is not None:
        qs = qs.filter(run_scorer_id=params["scorer"])
    if params.get("status"):
        qs = qs.filter(status=params["status"])
    if params.get("judge_passed") is not None:
        qs = qs.filter(judge_passed=params["judge_passed"])
    if params.get("final_passed") is not None:
        qs = qs.filter(final_passed=params["final_passed"])
    if params.get("min_score") is not None:
        qs = qs.filter(final_score__gte=params["min_score"])
    if params.get("max_score") is not None:
        qs = qs.filter(final_score__lte=params["max_score"])
    if params.get("reviewed") is not None:
        qs = qs.filter(reviewed=params["reviewed"])
    if params.get("overridden") is not None:
        qs = qs.filter(overridden=params["overridden"])
    if params.get("mine"):
        qs = qs.filter(assignee_id=user.pk if user.is_authenticated else None)
    if params.get("assignee") is not None:
        qs = qs.filter(assignee_id=params["assignee"])
    if params.get("disagree"):
        # The final numbers leave the judge's only through an active override (the
        # review services recompute final = judge otherwise), so "a final verdict that
        # differs, or any active override" is exactly `overridden`: one small partial
        # index (review_result_overridden_idx) instead of a scan of the run.
        qs = qs.filter(overridden=True)
    text = (params.get("q") or "").strip()
    if text:
        # Postgres refuses NUL even as a query parameter: a 400, not a server error.
        text_check_storable(text, field="q")
        # A semi-join on the run's dataset: one scan of its items, not one per result.
        matching = items_matching(dataset_id=run.dataset_id, text=text)
        qs = qs.filter(item_id__in=matching.values("id"))
    return qs.select_related("item", "run_scorer", "assignee").order_by(*SORTS[sort])


def results_page(qs: QuerySet[Result], *, offset: int, limit: int) -> list[Result]:
    """One page of `qs`: the ids first (sorted on Result's own indexed columns, no
    joins), then those rows with their item, scorer and assignee. Joining before the
    LIMIT would make the database join every matching row of a 100k-result run."""
    ids = list(qs.values_list("id", flat=True)[offset : offset + limit])
    rows = qs.model.objects.filter(id__in=ids).select_related(
        "item", "run_scorer", "assignee"
    )
    by_id = {row.pk: row for row in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


# Counting 100k matching rows costs more than fetching a page; past this many the list
# says "10,000+" and people narrow the filters (or sort) rather than page to the end.
COUNT_CAP = 10_000


class PagedResults:
    """What Django's Paginator needs (count + slicing), paging through `results_page`.

    The count stops at COUNT_CAP (`capped` tells the template to print "10,000+")."""

    def __init__(self, qs: QuerySet[Result], *, cap: int | None = None) -> None:
        self.qs = qs
        self.cap = COUNT_CAP if cap is None else cap
        self.capped = False
        self._count: int | None = None

    def count(self) -> int:
        if self._count is None:
            # Ids only: the page's select_related joins would be made for every
            # counted row (the item a second time, beside the text search's).
            counted = self.qs.order_by().values("pk")[: self.cap + 1].count()
            self.capped = counted > self.cap
            self._count = min(counted, self.cap)
        return self._count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, key: slice) -> list[Result]:
        start = key.start or 0
        return results_page(self.qs, offset=start, limit=(key.stop or start) - start)


def filters_to_json(params: ResultFilters) -> dict[str, Any]:
    """Only the constraining keys, for storing on a queue and building query strings."""
    out = {}
    for key, value in params.items():
        # `is` checks: False and 0.0 are real constraints for verdicts and scores.
        if value is None or value == "" or (key in _FLAGS and value is False):
            continue
        if key == "sort" and value == DEFAULT_SORT:
            continue
        out[key] = value
    return out


_FLAGS = frozenset({"mine", "disagree"})


# ---------------------------------------------------------------- flip keys


@dataclass(frozen=True)
class FlipField:
    """What key `number` (1–9) flips, with labels for its button."""

    number: int
    path: str
    value: Any
    new_value: Any
    label: str
    new_label: str


def _label(labels: dict[str, str], value: Any) -> str:
    key = str(value).lower() if isinstance(value, bool) else str(value)
    return labels.get(key, str(value))


def _flip_value(current: Any, allowed: list[Any]) -> Any:
    """What "flip" means for one field.

    Booleans and yes/no verdicts toggle; an "unsure" verdict flips to "yes" (a reviewer
    flipping an unverifiable claim is confirming it; the item page sets "unsure"
    explicitly); longer scales (relevance levels, factuality categories) step to the
    next allowed value.
    """
    if isinstance(current, bool):
        return not current
    norm = str(current).strip().lower()
    if {"yes", "no"} <= set(allowed) <= {"yes", "no", "unsure"}:
        return "no" if norm == "yes" else "yes"
    lowered = [str(v).lower() for v in allowed]
    if norm in lowered:
        return allowed[(lowered.index(norm) + 1) % len(allowed)]
    return allowed[0]


def flip_fields(
    *, kind: str, analysis: dict[str, Any] | None, limit: int = 9
) -> list[FlipField]:
    """The flips keys 1..limit perform, numbered like the item page's analysis rows:
    key n is the first overridable field of list element n (for context relevance the
    relevance level); a kind without a list (factuality) has key 1 for its category."""
    spec = KINDS.get(kind)
    if spec is None or not analysis or not spec.overridable:
        return []
    pattern, allowed = next(iter(spec.overridable.items()))
    labels = spec.value_labels.get(pattern, {})
    if "*" in pattern:
        node = analysis.get(pattern.split(".", 1)[0])
        paths = [
            pattern.replace("*", str(i), 1)
            for i in range(len(node) if isinstance(node, list) else 0)
        ]
    else:
        paths = [pattern]
    fields = []
    for number, path in enumerate(paths[:limit], 1):
        try:
            value = get_path(analysis, path)
        except AnalysisError:
            break
        new_value = _flip_value(value, allowed)
        fields.append(
            FlipField(
                number=number,
                path=path,
                value=value,
                new_value=new_value,
                label=_label(labels, value),
                new_label=_label(labels, new_value),
            )
        )
    return fields


# ---------------------------------------------------------------- queues


def queue_get_for_user(
    *, user: User, pk: int, project_id: int | None = None, write: bool = False
) -> ReviewQueue:
    queue = ReviewQueue.objects.select_related("run", "project").filter(pk=pk).first()
    if queue is None or (project_id is not None and queue.project_id != project_id):
        raise Http404("No such queue.")
    queue.project = project_get_for_user(user=user, pk=queue.project_id, write=write)
    return queue


def queue_entry_at(*, queue: ReviewQueue, position: int) -> QueueEntry | None:
    return (
        QueueEntry.objects.select_related(
            "result__item", "result__run_scorer", "result__assignee"
        )
        .filter(queue=queue, position=position)
        .first()
    )


def queue_progress(*, queue: ReviewQueue) -> dict[str, int]:
    counts = QueueEntry.objects.filter(queue=queue).aggregate(
        total=Count("id"), reviewed=Count("id", filter=Q(result__reviewed=True))
    )
    return {"total": counts["total"], "reviewed": counts["reviewed"]}


def queue_next_unreviewed(*, queue: ReviewQueue, after: int = 0) -> int | None:
    """Position of the first unreviewed entry after `after` (wrapping to the start)."""
    entries = QueueEntry.objects.filter(queue=queue, result__reviewed=False)
    position = (
        entries.filter(position__gt=after)
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )
    if position is None:
        position = (
            entries.order_by("position").values_list("position", flat=True).first()
        )
    return position


def queue_list_for_project(*, project_id: int) -> QuerySet[ReviewQueue]:
    return (
        ReviewQueue.objects.filter(project_id=project_id)
        .select_related("run", "created_by")
        .annotate(
            reviewed=Count("entries", filter=Q(entries__result__reviewed=True)),
        )
        .order_by("-created_at", "-id")
    )


@dataclass(frozen=True)
class JudgeEstimate:
    """Judge precision/recall for detecting failures, estimated from a stratified sample.

    Positive class = "fail". Every failing result (by the judge) is in the queue and a
    share of the passing ones, so each stratum is scaled to its population:
    TP ≈ N_fail × (human-fail share among reviewed judge-fails),
    FN ≈ N_pass × (human-fail share among reviewed judge-passes).
    """

    population_fail: int
    population_pass: int
    reviewed_fail: int
    reviewed_pass: int
    agree_fail: int  # judge said fail, human said fail
    missed_fail: int  # judge said pass, human said fail
    precision: float | None
    recall: float | None
    est_true_fail: float | None
    est_missed_fail: float | None


def queue_estimate(*, queue: ReviewQueue) -> JudgeEstimate | None:
    if not queue.stratified:
        return None
    human_fail = Q(result__human_passed=False) | Q(
        result__human_passed__isnull=True, result__final_passed=False
    )
    reviewed = Q(result__reviewed=True)
    rows = {
        row["stratum"]: row
        for row in QueueEntry.objects.filter(queue=queue)
        .values("stratum")
        .annotate(
            reviewed=Count("id", filter=reviewed),
            human_fail=Count("id", filter=reviewed & human_fail),
        )
    }
    population = queue.stratified.get("population", {})
    n_fail_pop = int(population.get("fail", 0))
    n_pass_pop = int(population.get("pass", 0))
    fail = rows.get(QueueEntry.Stratum.FAIL, {"reviewed": 0, "human_fail": 0})
    passing = rows.get(QueueEntry.Stratum.PASS, {"reviewed": 0, "human_fail": 0})
    precision = fail["human_fail"] / fail["reviewed"] if fail["reviewed"] else None
    est_tp = n_fail_pop * precision if precision is not None else None
    if n_pass_pop == 0:
        est_fn: float | None = 0.0
    elif passing["reviewed"]:
        est_fn = n_pass_pop * passing["human_fail"] / passing["reviewed"]
    else:
        est_fn = None
    recall = None
    if est_tp is not None and est_fn is not None:
        recall = est_tp / (est_tp + est_fn) if est_tp + est_fn > 0 else None
    return JudgeEstimate(
        population_fail=n_fail_pop,
        population_pass=n_pass_pop,
        reviewed_fail=fail["reviewed"],
        reviewed_pass=passing["reviewed"],
        agree_fail=fail["human_fail"],
        missed_fail=passing["human_fail"],
        precision=precision,
        recall=recall,
        est_true_fail=est_tp,
        est_missed_fail=est_fn,
    )


def stratified_sample_size(*, population: int, share: float) -> int:
    """ceil(share × population), at least one when there is anything to sample."""
    if population <= 0 or share <= 0:
        return 0
    return min(population, max(1, math.ceil(share * population)))


# ---------------------------------------------------------------- assigned, comments, audit


def assigned_runs_summary(*, project_id: int, user: User) -> list[dict[str, Any]]:
    """Per run: how many results are assigned to `user` and how many are reviewed."""
    rows = (
        Result.objects.filter(run__project_id=project_id, assignee_id=user.pk)
        .values("run_id", "run__name")
        .annotate(total=Count("id"), reviewed=Count("id", filter=Q(reviewed=True)))
        .order_by("-run_id")
    )
    return [
        {
            "run_id": row["run_id"],
            "run_name": row["run__name"] or f"Run #{row['run_id']}",
            "total": row["total"],
            "reviewed": row["reviewed"],
            "remaining": row["total"] - row["reviewed"],
        }
        for row in rows
    ]


def assigned_results(*, project_id: int, user: User) -> QuerySet[Result]:
    """The user's assigned results, unreviewed first."""
    return (
        Result.objects.filter(run__project_id=project_id, assignee_id=user.pk)
        .select_related("item", "run_scorer", "run")
        .order_by("reviewed", "-run_id", "item__index", "run_scorer__position", "id")
    )


def comment_list(*, result: Result) -> QuerySet[Comment]:
    return Comment.objects.filter(result=result).select_related("user")


def audit_list_for_run(*, run: Run, action: str = "") -> QuerySet[AuditEvent]:
    qs = AuditEvent.objects.filter(run=run).select_related("actor", "result__item")
    if action:
        qs = qs.filter(action=action)
    return qs.order_by("-created_at", "-id")


def audit_actions_for_run(*, run: Run) -> list[str]:
    return list(
        AuditEvent.objects.filter(run=run)
        .order_by("action")
        .values_list("action", flat=True)
        .distinct()
    )


def audit_list_for_result(*, result: Result) -> QuerySet[AuditEvent]:
    return (
        AuditEvent.objects.filter(result=result)
        .select_related("actor")
        .order_by("-created_at", "-id")
    )
