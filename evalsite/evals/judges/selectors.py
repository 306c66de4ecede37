"""Reads of judge connections: user-scoped lookup, list, how fast each can be called."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.evals.engine import livestats
from evalsite.evals.models import JudgeConnection

AnyUser = User | AnonymousUser


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
    if judge is None or (project_id is not None and judge.project_id != project_id):
        raise Http404("No such judge connection.")
    judge.project = project_get_for_user(
        user=user, pk=judge.project_id, write=write, manage=manage
    )
    return judge


def judge_list(*, project_id: int, archived: bool = False) -> QuerySet[JudgeConnection]:
    """The project's judge connections: the active ones, or with `archived` the
    archived ones only."""
    return JudgeConnection.objects.filter(
        project_id=project_id, archived=archived
    ).order_by("-is_offline", "name", "pk")


@dataclass(frozen=True)
class RateBound:
    """How fast one judge connection can be called: at most min(max concurrency ÷
    latency, requests per minute ÷ 60) calls/s, and which of the two limits binds.

    0 means "no limit" for either knob (as in the limiter). Without a latency estimate
    only the requests-per-minute side is known; ``break_even_ms`` says how slow the
    judge would have to be for the concurrency limit to bind instead."""

    judge_id: int | None  # None: a connection not saved yet (the new-judge form)
    judge_name: str
    max_concurrency: int
    requests_per_minute: int
    latency_ms: float | None
    latency_source: str  # where latency_ms comes from ("" without one)

    @property
    def rpm_rate(self) -> float | None:
        return self.requests_per_minute / 60 if self.requests_per_minute else None

    @property
    def concurrency_rate(self) -> float | None:
        if not self.max_concurrency or not self.latency_ms:
            return None
        return self.max_concurrency / (self.latency_ms / 1000)

    @property
    def break_even_ms(self) -> float | None:
        """The latency at which both limits allow the same rate."""
        if not self.max_concurrency or not self.requests_per_minute:
            return None
        return 1000 * self.max_concurrency / (self.requests_per_minute / 60)

    @property
    def binding(self) -> str:
        """ "concurrency", "requests_per_minute", or "" when unknown or unlimited."""
        rpm, concurrency = self.rpm_rate, self.concurrency_rate
        if rpm is not None and concurrency is not None:
            return "requests_per_minute" if rpm <= concurrency else "concurrency"
        if concurrency is not None:
            return "concurrency"
        if rpm is not None and (not self.max_concurrency or self.latency_ms):
            return "requests_per_minute"
        return ""

    @property
    def rate(self) -> float | None:
        """The bound in calls/s (None: unlimited, or not known without a latency)."""
        if self.binding == "requests_per_minute":
            return self.rpm_rate
        if self.binding == "concurrency":
            return self.concurrency_rate
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "judge_name": self.judge_name,
            "max_concurrency": self.max_concurrency,
            "requests_per_minute": self.requests_per_minute,
            "latency_ms": self.latency_ms,
            "latency_source": self.latency_source,
            "concurrency_rate": self.concurrency_rate,
            "rpm_rate": self.rpm_rate,
            "rate": self.rate,
            "binding": self.binding,
        }


def judge_rate_bound(
    *, judge: JudgeConnection, live: livestats.Snapshot | None = None
) -> RateBound:
    """The connection's bound, with the latency of `live` (a running run's figures)
    when its calls have ended lately, else the one the connection last saw."""
    latency, source = None, ""
    recent = live.latency_ms(judge.pk) if live is not None else None
    if recent is not None:
        latency, source = recent, "this run's calls in the last few seconds"
    elif judge.observed_latency_ms:
        latency = judge.observed_latency_ms
        when = judge.latency_observed_at
        source = "the connection's last run" + (
            f" ({when:%Y-%m-%d %H:%M})" if when is not None else ""
        )
    return RateBound(
        judge_id=judge.pk,
        judge_name=judge.name,
        max_concurrency=judge.max_concurrency,
        requests_per_minute=judge.requests_per_minute,
        latency_ms=latency,
        latency_source=source,
    )


def judge_rate_bound_new() -> RateBound:
    """The bound of a new connection with the default limits (the new-judge form)."""
    return judge_rate_bound(judge=JudgeConnection(name=""))
