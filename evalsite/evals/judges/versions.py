"""Judge versions: the numbered identity of each judge a project has used.

``scoring.judge_version`` says what a judge is (a spec and its digest); this module
stores one ``JudgeVersion`` per project, kind and digest, numbered v1, v2, ... per
project and kind in the order they are first used. A run scorer gets its version when
the run starts (``judge_version_for``); every result judged for it records the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.db.models import Max

from evalsite.accounts.models import Project
from evalsite.evals.models import JudgeVersion, RunScorer
from scoring import KINDS
from scoring.judge_version import judge_digest, judge_label, judge_spec

__all__ = [
    "judge_spec_for_run_scorer",
    "judge_version_for",
    "judge_version_get_or_create",
]

# Attempts at numbering a new version when another transaction takes the same number.
_NUMBER_ATTEMPTS = 5


def judge_spec_for_run_scorer(run_scorer: RunScorer) -> dict[str, Any] | None:
    """The judge spec of a run scorer (its options and judge snapshot); None for the
    kinds without a judge."""
    if not KINDS[run_scorer.kind].needs_judge:
        return None
    snapshot = run_scorer.judge_snapshot or {}
    return judge_spec(
        run_scorer.kind,
        run_scorer.options or {},
        str(snapshot.get("model") or ""),
        {"temperature": float(snapshot.get("temperature") or 0.0)},
    )


def judge_version_get_or_create(
    *,
    project: Project,
    spec: Mapping[str, Any],
    user: User | AnonymousUser | None = None,
) -> JudgeVersion:
    """The project's version of the judge ``spec`` (from ``scoring.judge_version.
    judge_spec``), created with the next number of its kind when it is new.

    Safe against a concurrent start of the same judge: the unique constraints decide,
    and the loser reads the winner's row (or takes the next number)."""
    kind = str(spec["kind"])
    digest = judge_digest(spec)
    for _ in range(_NUMBER_ATTEMPTS):
        found = JudgeVersion.objects.filter(
            project=project, kind=kind, digest=digest
        ).first()
        if found is not None:
            return found
        last = JudgeVersion.objects.filter(project=project, kind=kind).aggregate(
            n=Max("number")
        )["n"]
        number = (last or 0) + 1
        try:
            with transaction.atomic():
                return JudgeVersion.objects.create(
                    project=project,
                    kind=kind,
                    digest=digest,
                    number=number,
                    label=judge_label(spec, number)[:300],
                    spec=dict(spec),
                    created_by=user if isinstance(user, User) else None,
                )
        except IntegrityError:
            continue
    raise RuntimeError(f"could not number a new {kind} judge version")


def judge_version_for(
    run_scorer: RunScorer, *, user: User | AnonymousUser | None = None
) -> JudgeVersion | None:
    """Set and return the run scorer's judge version (None for kinds without a judge).
    Kept when already set: a run judges with the version it started with."""
    if run_scorer.judge_version_id is not None:
        return run_scorer.judge_version
    spec = judge_spec_for_run_scorer(run_scorer)
    if spec is None:
        return None
    version = judge_version_get_or_create(
        project=run_scorer.run.project, spec=spec, user=user
    )
    RunScorer.objects.filter(pk=run_scorer.pk).update(judge_version=version)
    run_scorer.judge_version = version
    return version
