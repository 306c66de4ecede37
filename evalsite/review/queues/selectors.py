"""Review queues: access, entries, progress, judge estimates, flip keys, assigned work."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import (
    Case,
    Count,
    F,
    Func,
    IntegerField,
    JSONField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Cast
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.evals.models import Result
from evalsite.evals.results.item import value_label
from evalsite.lib.db import compiled_once
from evalsite.review.explorer.selectors import User
from evalsite.review.models import QueueEntry, QueueFlag, ReviewQueue
from scoring import KINDS, AnalysisError, get_path


@dataclass(frozen=True)
class FlipField:
    """What key `number` (1–9) flips, with labels for its button."""

    number: int
    path: str
    value: Any
    new_value: Any
    label: str
    new_label: str


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


def overridable_values(
    *, kind: str, analysis: dict[str, Any] | None, limit: int = 9
) -> list[tuple[str, Any]]:
    """(path, value) of the fields keys 1..limit flip (see `flip_fields`), without
    their labels: what the agreement on verdicts reads of every answered result
    (0.5 s for the 49k results of bench_million's queue, flip_fields 1.2 s)."""
    spec = KINDS.get(kind)
    if spec is None or not analysis or not spec.overridable:
        return []
    pattern = next(iter(spec.overridable))
    if "*" in pattern:
        node = analysis.get(pattern.split(".", 1)[0])
        paths = [
            pattern.replace("*", str(i), 1)
            for i in range(len(node) if isinstance(node, list) else 0)
        ]
    else:
        paths = [pattern]
    values = []
    for path in paths[:limit]:
        try:
            values.append((path, get_path(analysis, path)))
        except AnalysisError:
            break
    return values


# A pattern a JSON path in the database reads the way get_path does: plain names, as
# a field ("category", "a.b") or as a field of every element of a list
# ("verdicts.*.verdict").
_FIELD_PATTERN = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_LIST_PATTERN = re.compile(r"([A-Za-z_]\w*)\.\*((?:\.[A-Za-z_]\w*)+)")


def _json_path(dotted: str) -> str:
    return "".join(f'."{name}"' for name in dotted.split(".") if name)


def _path_function(function: str, path: str) -> Func:
    """function(analysis, 'strict <path>', '{}', silent): strict, so a list is never
    unwrapped and a missing field is no value; silent, so that is not an error."""
    return Func(
        F("analysis"),
        Value(f"strict ${path}"),
        Value({}, output_field=JSONField()),
        Value(True),
        function=function,
        output_field=JSONField(),
    )


def overridable_values_read(
    results: QuerySet[Result], *, limit: int = 9
) -> Iterator[tuple[int, bool | None, bool | None, list[tuple[str, Any]]]]:
    """(id, judge pass, final pass, `overridable_values` of the judge's analysis) of
    each of `results`.

    On Postgres the values come out of the analyses by JSON path, in the database,
    rather than each whole analysis (every claim and reason) read, decoded and
    walked here: bench_million's 49k answered results take 3.1-5.4 s that way
    instead of 6.1-9.3 s (load average 8-9). A result whose values the path may not
    read exactly as get_path would (an element without the field: get_path stops
    there) is read whole."""
    postgres = connection.vendor == "postgresql"
    values_by_kind, count_by_kind, kinds = [], [], set()
    for kind, spec in KINDS.items():
        pattern = next(iter(spec.overridable), None)
        if not postgres or pattern is None:
            continue
        if listed := _LIST_PATTERN.fullmatch(pattern):
            head, rest = listed.groups()
            read = _path_function(
                "jsonb_path_query_array", f'."{head}"[*]{_json_path(rest)}'
            )
            size = _path_function("jsonb_path_query_first", f'."{head}".size()')
            count_by_kind.append(
                When(run_scorer__kind=kind, then=Cast(size, IntegerField()))
            )
        elif _FIELD_PATTERN.fullmatch(pattern):
            read = _path_function("jsonb_path_query_array", _json_path(pattern))
        else:
            continue
        values_by_kind.append(When(run_scorer__kind=kind, then=read))
        kinds.add(kind)
    if not kinds:
        for result_id, judged, final, analysis, kind in results.values_list(
            "id", "judge_passed", "final_passed", "analysis", "run_scorer__kind"
        ):
            yield (
                result_id,
                judged,
                final,
                overridable_values(kind=kind, analysis=analysis, limit=limit),
            )
        return
    rows = results.annotate(
        verdict_values=Case(*values_by_kind, output_field=JSONField()),
        verdict_count=Case(*count_by_kind, output_field=IntegerField()),
    ).values_list(
        "id",
        "judge_passed",
        "final_passed",
        "run_scorer__kind",
        "verdict_values",
        "verdict_count",
    )
    whole: dict[int, tuple[bool | None, bool | None]] = {}
    for result_id, judged, final, kind, values, count in rows:
        values = values or []
        found = KINDS.get(kind)
        pattern = next(iter(found.overridable), "") if found is not None else ""
        if not pattern:
            yield result_id, judged, final, []  # no verdict to flip
        elif kind not in kinds:
            whole[result_id] = (judged, final)
        elif "*" not in pattern:
            yield result_id, judged, final, [(pattern, v) for v in values[:1]][:limit]
        elif len(values) == (count or 0):
            paths = (pattern.replace("*", str(i), 1) for i in range(len(values)))
            yield (
                result_id,
                judged,
                final,
                list(zip(paths, values, strict=False))[:limit],
            )
        else:
            whole[result_id] = (judged, final)
    if whole:
        for result_id, analysis, kind in Result.objects.filter(
            pk__in=list(whole)
        ).values_list("id", "analysis", "run_scorer__kind"):
            yield (
                result_id,
                *whole[result_id],
                overridable_values(kind=kind, analysis=analysis, limit=limit),
            )


def flip_fields(
    *, kind: str, analysis: dict[str, Any] | None, limit: int = 9
) -> list[FlipField]:
    """The flips keys 1..limit perform, numbered like the item page's analysis rows:
    key n is the first overridable field of list element n (for context relevance the
    relevance level); a kind without a list (factuality) has key 1 for its category."""
    spec = KINDS.get(kind)
    if spec is None:
        return []
    pattern, allowed = next(iter(spec.overridable.items()), ("", []))
    labels = spec.value_labels.get(pattern, {})
    fields = []
    for number, (path, value) in enumerate(
        overridable_values(kind=kind, analysis=analysis, limit=limit), 1
    ):
        new_value = _flip_value(value, allowed)
        fields.append(
            FlipField(
                number=number,
                path=path,
                value=value,
                new_value=new_value,
                label=value_label(labels, value),
                new_label=value_label(labels, new_value),
            )
        )
    return fields


def queue_get_for_user(
    *,
    user: User,
    pk: int,
    write: bool = False,
    manage: bool = False,
    project_id: int | None = None,
) -> ReviewQueue:
    """A review queue of a project the user belongs to; 404 for outsiders, 403 by role."""

    def build(v: Mapping[str, int]) -> QuerySet[ReviewQueue]:
        return ReviewQueue.objects.select_related("run", "project").filter(
            pk=v["queue"]
        )[:1]

    # Compiled once (see team.selectors.answer_target): the two joined tables'
    # columns took 1-2 ms of CPU of every queue page and answer.
    found = compiled_once("queue_get_for_user", build, {"queue": pk})
    queue: ReviewQueue | None = found[0] if found else None
    if queue is None or (project_id is not None and queue.project_id != project_id):
        raise Http404("No such queue.")
    queue.project = project_get_for_user(
        user=user, pk=queue.project_id, write=write, manage=manage
    )
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


def queue_list_for_project(
    *, project_id: int, archived: bool = False
) -> QuerySet[ReviewQueue]:
    """The project's queues, newest first: the open ones, or with `archived` the
    archived (closed) ones only."""
    return (
        ReviewQueue.objects.filter(project_id=project_id, archived=archived)
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


FLAG_STATES = ("open", "resolved", "all")


def flag_list_for_project(
    *, project_id: int, state: str = "open"
) -> QuerySet[QueueFlag]:
    """The project's flagged queue items, newest first: open ones, resolved ones or
    all of them."""
    flags = QueueFlag.objects.filter(project_id=project_id).select_related(
        "queue",
        "entry__result__item",
        "entry__result__run_scorer",
        "pair",
        "flagged_by",
        "resolved_by",
    )
    if state == "open":
        flags = flags.filter(resolved_at__isnull=True)
    elif state == "resolved":
        flags = flags.filter(resolved_at__isnull=False)
    return flags.order_by("-created_at", "-id")


def flag_get_for_user(
    *, user: User, pk: int, project_id: int | None = None, manage: bool = False
) -> QueueFlag:
    """A flag of a project the user belongs to (404 for outsiders and, with
    `project_id`, for another project's flag; 403 when `manage` and the user is no
    owner)."""
    flag = (
        QueueFlag.objects.select_related("queue", "entry", "pair").filter(pk=pk).first()
    )
    if flag is None or (project_id is not None and flag.project_id != project_id):
        raise Http404("No such flag.")
    flag.project = project_get_for_user(user=user, pk=flag.project_id, manage=manage)
    return flag
