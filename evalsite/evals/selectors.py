"""Reads of the evals app: user-scoped lookups, lists, run progress and errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from evalsite.evals import livestats
from evalsite.evals.models import JudgeConnection, Result, Run, ScorerConfig

AnyUser = User | AnonymousUser


def _outside(obj: JudgeConnection | ScorerConfig | Run, project_id: int | None) -> bool:
    """In another project than `project_id` (given in project-scoped URLs)."""
    return project_id is not None and obj.project_id != project_id


def judge_get_for_user(
    *,
    user: AnyUser,
    pk: int,
    write: bool = False,
    manage: bool = False,
    project_id: int | None = None,
) -> JudgeConnection:
    """A judge connection of one of the user's projects (404 otherwise; 403 by role).
    With `project_id`, one of another project is a 404 too."""
    judge = JudgeConnection.objects.filter(pk=pk).first()
    if judge is None or _outside(judge, project_id):
        raise Http404("No such judge connection.")
    judge.project = project_get_for_user(
        user=user, pk=judge.project_id, write=write, manage=manage
    )
    return judge


def scorer_get_for_user(
    *, user: AnyUser, pk: int, write: bool = False, project_id: int | None = None
) -> ScorerConfig:
    scorer = ScorerConfig.objects.select_related("judge").filter(pk=pk).first()
    if scorer is None or _outside(scorer, project_id):
        raise Http404("No such scorer.")
    scorer.project = project_get_for_user(user=user, pk=scorer.project_id, write=write)
    return scorer


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


def judge_list(*, project_id: int) -> QuerySet[JudgeConnection]:
    return JudgeConnection.objects.filter(project_id=project_id).order_by(
        "-is_offline", "name", "pk"
    )


def scorer_list(
    *, project_id: int, include_archived: bool = False
) -> QuerySet[ScorerConfig]:
    qs = ScorerConfig.objects.filter(project_id=project_id).select_related("judge")
    if not include_archived:
        qs = qs.filter(archived=False)
    return qs.order_by("name", "-version", "pk")


def scorers_in_project(*, project_id: int, ids: list[int]) -> list[ScorerConfig]:
    """The scorers with these ids in this project, in the given order; Http404 if any
    is missing (outsiders learn nothing about other projects' ids)."""
    found = {
        s.pk: s
        for s in ScorerConfig.objects.select_related("judge").filter(
            project_id=project_id, pk__in=ids
        )
    }
    missing = [i for i in ids if i not in found]
    if missing:
        raise Http404(f"No such scorer: {missing[0]}.")
    return [found[i] for i in ids]


def run_list(*, project_id: int) -> QuerySet[Run]:
    return (
        Run.objects.filter(project_id=project_id)
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
    # While running, from the run's dispatchers (evalsite/evals/livestats.py).
    in_flight: int = 0
    calls_per_second: float = 0.0
    throttled: int = 0  # the judge's 429 answers during the run
    server_errors: int = 0  # and its 5xx answers

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
        }


def run_progress_many(*, runs: list[Run]) -> dict[int, RunProgress]:
    """Progress of several runs in one query (the run list)."""
    counts: dict[int, dict[str, int]] = {run.pk: {} for run in runs}
    rows = (
        Result.objects.filter(run_id__in=list(counts))
        .values_list("run_id", "status")
        .annotate(n=Count("pk"))
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
    counts = dict(
        results.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    progress = _progress(run, counts)
    if run.is_finished or not run.started_at:
        return progress
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
    )


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
    """Errored results grouped by scorer and message, most frequent first."""
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
            "datasets": Dataset.objects.filter(project=project).count(),
            "scorers": ScorerConfig.objects.filter(
                project=project, archived=False
            ).count(),
            "judges": JudgeConnection.objects.filter(project=project).count(),
            "assigned_open": Result.objects.filter(
                run__project=project, assignee=user, reviewed=False
            ).count(),
        },
        "recent_runs": Run.objects.filter(project=project).select_related("dataset")[
            :10
        ],
    }


# A run's per-scorer aggregates (judge vs human) are review's to compute; the run page
# and the run API show them. Review registers its function from its AppConfig.ready, so
# evals, below review, never imports it.
RunAggregates = Callable[..., Sequence[Any]]
_run_aggregates: list[RunAggregates] = []


def on_run_aggregates(provider: RunAggregates) -> None:
    """Register `provider(run_id=...) -> aggregates` (one provider; the last one wins)."""
    _run_aggregates[:] = [provider]


def run_aggregates_of(*, run_id: int) -> Sequence[Any]:
    """The run's aggregates from the registered provider ([] when none is installed)."""
    return _run_aggregates[0](run_id=run_id) if _run_aggregates else []
