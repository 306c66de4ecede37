"""Reads of the evals app: user-scoped lookups, lists, run progress and errors."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, Min, QuerySet
from django.http import Http404
from django.utils import timezone

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import project_get_for_user
from evalsite.datasets.models import Dataset
from evalsite.evals.engine import livestats
from evalsite.evals.judges.selectors import RateBound, judge_rate_bound
from evalsite.evals.models import JudgeConnection, Result, Run, ScorerConfig
from evalsite.evals.results.aggregates import (
    ERROR_GROUPS_PER_SCORER,
    JudgeSides,
    cached_judge_sides,
    cached_judge_sides_many,
)

AnyUser = User | AnonymousUser


def _outside(obj: Run, project_id: int | None) -> bool:
    """In another project than `project_id` (given in project-scoped URLs)."""
    return project_id is not None and obj.project_id != project_id


def run_get_for_user(
    *,
    user: AnyUser,
    pk: int,
    write: bool = False,
    manage: bool = False,
    project_id: int | None = None,
) -> Run:
    """A run of a project the user belongs to; 404 for outsiders, 403 by role.
    With `project_id`, a run of another project is a 404 too."""
    run = Run.objects.select_related("dataset").filter(pk=pk).first()
    if run is None or _outside(run, project_id):
        raise Http404("No such run.")
    run.project = project_get_for_user(
        user=user, pk=run.project_id, write=write, manage=manage
    )
    return run


def result_get_for_user(
    *,
    user: AnyUser,
    pk: int,
    write: bool = False,
    manage: bool = False,
    project_id: int | None = None,
) -> Result:
    """A result of a project the user belongs to; 404 for outsiders, 403 by role.

    `project_id` (from the URL) must match the result's project, so a link that mixes
    projects is a 404 too. The project (with `.membership`) is attached as
    `result.project` and `result.run.project`.
    """
    # .get, not .filter().first(): first() orders the five-table join by id, which
    # costs the planner more than the row itself.
    try:
        result = Result.objects.select_related("run", "run_scorer", "item").get(pk=pk)
    except Result.DoesNotExist:
        result = None
    if result is None or (
        project_id is not None and result.run.project_id != project_id
    ):
        raise Http404("No such result.")
    # The membership check reads the project anyway: one copy serves both.
    project = project_get_for_user(
        user=user, pk=result.run.project_id, write=write, manage=manage
    )
    result.project = result.run.project = project
    return result


def dataset_get_in_project(*, project_id: int, pk: int) -> Dataset:
    dataset = Dataset.objects.filter(project_id=project_id, pk=pk).first()
    if dataset is None:
        raise Http404("No such dataset.")
    return dataset


def runs_listed(*, project_id: int | None = None) -> QuerySet[Run]:
    """The runs people list, pick and export: purpose "run" only. Judge lab replays
    and bias audits are runs too, but only their own pages show them. Every list of
    runs (pages, pickers, API, exports, webhooks) starts here."""
    runs = Run.objects.filter(purpose=Run.Purpose.RUN)
    if project_id is not None:
        runs = runs.filter(project_id=project_id)
    return runs


def run_list(*, project_id: int, archived: bool = False) -> QuerySet[Run]:
    """The project's runs, newest first: the active ones, or with `archived` the
    archived ones only."""
    return (
        runs_listed(project_id=project_id)
        .filter(archived=archived)
        .select_related("dataset")
        .order_by("-created_at", "-pk")
    )


@dataclass(frozen=True)
class RunProgress:
    total: int
    ok: int
    errors: int
    pending: int
    cancelled: int
    rate: float | None  # finished results per second (lately while running)
    eta_seconds: float | None
    # While running, from the run's dispatchers (evalsite/evals/engine/livestats.py).
    in_flight: float = 0.0  # mean calls the judges are working on, lately
    calls_per_second: float = 0.0
    throttled: int = 0  # the judge's 429 answers during the run
    server_errors: int = 0  # and its 5xx answers
    # Each judge connection's calls/s bound and the limit that binds (run_progress).
    bounds: tuple[RateBound, ...] = ()
    # How long the judge has been unreachable (None: it answers), and how long it may
    # be before results fail (JUDGE_OUTAGE_SECONDS).
    unreachable_seconds: float | None = None
    outage_seconds: float = 0.0

    @property
    def outage_label(self) -> str:
        """The outage limit as the page says it: "5 min", "90 s"."""
        seconds = self.outage_seconds
        if seconds >= 60 and seconds % 60 == 0:
            return f"{seconds / 60:g} min"
        return f"{seconds:g} s"

    @property
    def done(self) -> int:
        """Finished results: ok plus errored (errors are finished, not pending)."""
        return self.ok + self.errors

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 100.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "done": self.done,
            "ok": self.ok,
            "errors": self.errors,
            "pending": self.pending,
            "cancelled": self.cancelled,
            "percent": round(self.percent, 1),
            "rate": self.rate,
            "eta_seconds": self.eta_seconds,
            "in_flight": self.in_flight,
            "calls_per_second": self.calls_per_second,
            "throttled": self.throttled,
            "server_errors": self.server_errors,
            "judge_unreachable_seconds": self.unreachable_seconds,
            "judge_outage_seconds": self.outage_seconds,
            "judge_bounds": [bound.as_dict() for bound in self.bounds],
        }


# COUNT(*), not COUNT(id): the (run, status) index then answers alone (an index-only
# scan), where counting the ids read every result row. bench_million's two 1M-result
# runs by status: 2,489 ms -> 548 ms (EXPLAIN ANALYZE, load 7).
_ROWS = Count("*")


def _fold_status(sides: JudgeSides) -> dict[str, int]:
    """Results by status, from a finished run's cached judge sides."""
    counts: dict[str, int] = {}
    for _, judge in sides:
        for group in judge.groups:
            counts[group["status"]] = counts.get(group["status"], 0) + group["n"]
    return counts


def run_progress_many(*, runs: list[Run]) -> dict[int, RunProgress]:
    """Progress of several runs (the run list): the finished ones whose judge sides
    are cached folded from them (see aggregates.cached_judge_sides), the others
    counted in one query. A list showing bench_million's two 1M-result runs took
    1.8-2.0 s counting both (load 7)."""
    counts: dict[int, dict[str, int]] = {run.pk: {} for run in runs}
    uncounted = []
    for pk, sides in cached_judge_sides_many(runs=runs).items():
        if sides is None:
            uncounted.append(pk)
        else:
            counts[pk] = _fold_status(sides)
    if uncounted:
        rows = (
            Result.objects.filter(run_id__in=uncounted)
            .values_list("run_id", "status")
            .annotate(n=_ROWS)
        )
        for run_id, status, n in rows:
            counts[run_id][status] = n
    return {run.pk: _progress(run, counts[run.pk]) for run in runs}


# The window of the "lately" rate: long enough to smooth a dispatcher's batches, short
# enough that the ETA follows a judge that slows down.
_RECENT_SECONDS = 15


def run_progress(*, run: Run) -> RunProgress:
    """One run's progress; while it runs, with the rate of the last few seconds (the
    ETA follows it) and the live figures its dispatchers publish."""
    results = Result.objects.filter(run=run)
    progress = _progress(run, _status_counts(run))
    if run.is_finished:
        # The bound is how fast a run can go under its connection's limits as they
        # are now; a finished run went at the limits it had, so none is shown.
        return progress
    if not run.started_at:
        return replace(progress, bounds=tuple(run_rate_bounds(run=run, live=None)))
    now = timezone.now()
    window = min(_RECENT_SECONDS, (now - run.started_at).total_seconds())
    rate, eta = progress.rate, progress.eta_seconds
    if window >= 2:
        recent = results.filter(
            status__in=(Result.Status.OK, Result.Status.ERROR),
            updated_at__gte=now - timedelta(seconds=window),
        ).count()
        rate = recent / window
        eta = progress.pending / rate if rate and progress.pending else None
    live = livestats.run_live(run_id=run.pk)
    return replace(
        progress,
        rate=rate,
        eta_seconds=eta,
        in_flight=live.in_flight,
        calls_per_second=live.calls_per_second,
        throttled=live.throttled,
        server_errors=live.server_errors,
        bounds=tuple(run_rate_bounds(run=run, live=live)),
        unreachable_seconds=live.unreachable_for(),
        outage_seconds=live.outage_seconds,
    )


def _status_counts(run: Run) -> dict[str, int]:
    """The run's results by status: folded from its scorers' cached judge sides once
    it is finished (see aggregates.cached_judge_sides), else counted."""
    sides = cached_judge_sides(run=run)
    if sides is None:
        return dict(
            Result.objects.filter(run=run)
            .values_list("status")
            .annotate(n=_ROWS)
            .values_list("status", "n")
        )
    return _fold_status(sides)


def _progress(run: Run, counts: dict[str, int]) -> RunProgress:
    ok = counts.get(Result.Status.OK, 0)
    errors = counts.get(Result.Status.ERROR, 0)
    pending = counts.get(Result.Status.PENDING, 0)
    cancelled = counts.get(Result.Status.CANCELLED, 0)
    rate = eta = None
    if run.started_at:
        end = run.finished_at or timezone.now()
        elapsed = (end - run.started_at).total_seconds()
        if elapsed > 0 and ok + errors:
            rate = (ok + errors) / elapsed
            eta = pending / rate if pending and not run.is_finished else None
    return RunProgress(
        total=run.total or sum(counts.values()),
        ok=ok,
        errors=errors,
        pending=pending,
        cancelled=cancelled,
        rate=rate,
        eta_seconds=eta,
    )


@dataclass(frozen=True)
class ErrorGroup:
    scorer_name: str
    run_scorer_id: int
    message: str
    count: int
    example_result_id: int


def run_error_groups(*, run: Run, limit: int = 50) -> list[ErrorGroup]:
    """Errored results grouped by scorer and message, most frequent first (then by
    scorer, then by message)."""
    sides = cached_judge_sides(run=run)
    if sides is not None and limit <= ERROR_GROUPS_PER_SCORER:
        # Each scorer's groups come in the database's order of messages (its rank
        # keeps it): the same order as the query below.
        ranked = sorted(
            (-count, rs.pk, rank, ErrorGroup(rs.name, rs.pk, message, count, example))
            for rs, judge in sides
            for rank, (message, count, example) in enumerate(judge.errors)
        )
        return [group for *_, group in ranked[:limit]]
    rows = (
        Result.objects.filter(run=run, status=Result.Status.ERROR)
        .values("run_scorer_id", "run_scorer__name", "error")
        .annotate(n=Count("pk"), example=Min("pk"))
        .order_by("-n", "run_scorer_id", "error")[:limit]
    )
    return [
        ErrorGroup(
            scorer_name=r["run_scorer__name"],
            run_scorer_id=r["run_scorer_id"],
            message=r["error"],
            count=r["n"],
            example_result_id=r["example"],
        )
        for r in rows
    ]


def project_overview_part(*, project: Project, user: User) -> dict[str, Any]:
    """Counts and recent runs for the project overview page (accounts' page; this is
    registered with accounts.selectors.on_project_overview in EvalsConfig.ready)."""
    return {
        "counts": {
            "datasets": Dataset.objects.filter(project=project, archived=False).count(),
            "scorers": ScorerConfig.objects.filter(
                project=project, archived=False
            ).count(),
            "judges": JudgeConnection.objects.filter(
                project=project, archived=False
            ).count(),
        },
        "recent_runs": run_list(project_id=project.pk)[:10],
    }


def run_rate_bounds(*, run: Run, live: livestats.Snapshot | None) -> list[RateBound]:
    """The bound of each judge connection the run calls."""
    judges = {
        rs.judge.pk: rs.judge
        for rs in run.run_scorers.select_related("judge").order_by("pk")
        if rs.judge is not None
    }
    return [judge_rate_bound(judge=j, live=live) for j in judges.values()]


def run_result_count(*, run: Run) -> int:
    """How many results the run has (every status): counted on the rows, or folded
    from the cached judge sides of a finished run (see _status_counts)."""
    sides = cached_judge_sides(run=run)
    if sides is None:
        return Result.objects.filter(run_id=run.pk).count()
    return sum(group["n"] for _, judge in sides for group in judge.groups)
