"""Blind review: which results hide the judge (and the other reviewers) from a user.

The one rule every page, fragment, export and endpoint asks. A result is *blind* to a
user while that user has an unanswered entry for it in a blind review queue: a
QueueEntry of a review-kind queue of the project that is blind (the queue's own flag,
or the project's "blind review" setting), and

- overlap 1 (one answer decides): the result is not reviewed yet (no human pass/fail
  and not marked reviewed), the queue card's own rule;
- overlap > 1: the entry still takes answers (state OPEN) and the user has not given
  their own ANSWER on it (selectors.reviews.answers_visible's rule).

While it is blind, nothing shows that user the judge's output (judge score, pass,
reason, analysis verdicts and reasons, the judge calls' prompts and raw replies), the
final fields (final = judge until someone reviews), the overrides' values or another
reviewer's answer for that result.

Only members who can answer (owners, adjudicators, reviewers) are ever blind: a viewer
cannot answer a queue, so there is nothing to bias, and viewers see everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.urls import reverse

from evalsite.accounts.models import REVIEW_ROLES, AuditEvent, Membership
from evalsite.evals.models import Result, Run
from evalsite.lib.db import compiled_once
from evalsite.review.models import QueueEntry, Review, ReviewQueue

AnyUser = User | AnonymousUser


def _can_answer(*, user: AnyUser, project_id: int, project: Any = None) -> bool:
    """Whether `user` may answer the project's queues (owner, adjudicator, reviewer).
    A `project` loaded by accounts.selectors.project_get_for_user carries the
    user's membership, and nothing is read again."""
    if not user.is_authenticated:
        return False
    membership = getattr(project, "membership", None)
    if (
        isinstance(membership, Membership)
        and membership.user_id == user.pk
        and membership.project_id == project_id
    ):
        return membership.can_review
    return Membership.objects.filter(
        project_id=project_id, user_id=user.pk, role__in=REVIEW_ROLES
    ).exists()


def _loaded_project(obj: Run | Result) -> Any:
    """The object's project when it is loaded already (never a query)."""
    if isinstance(obj, Result):
        return getattr(obj, "project", None)
    return obj.project if Run.project.is_cached(obj) else None


def _blind_entries(*, user: AnyUser) -> QuerySet[QueueEntry]:
    """Entries (of any project) still unanswered by `user` in a blind review queue."""
    own_answer = Review.objects.filter(
        queue_id=OuterRef("queue_id"),
        result_id=OuterRef("result_id"),
        reviewer_id=user.pk,
        kind=Review.Kind.ANSWER,
    )
    single = Q(
        queue__overlap=1,
        result__human_passed__isnull=True,
        result__reviewed=False,
    )
    several = Q(queue__overlap__gt=1, state=QueueEntry.State.OPEN) & ~Exists(own_answer)
    # The blind queues first, in a subquery: with the blind flags tested on the
    # joined queue and project (an OR of the two tables), Postgres read every entry
    # of every queue before it could drop those of queues that are not blind. The
    # explorer's count of a run's blind results (blind_run_split) took 24-93 ms on
    # bench_million (a 50k-entry queue that is not blind, load 7), 0.06 ms this way.
    blind_queues = ReviewQueue.objects.filter(
        Q(blind=True) | Q(project__blind_review=True),
        kind=ReviewQueue.Kind.REVIEW,
    )
    return QueueEntry.objects.filter(
        queue_id__in=blind_queues.values("pk"),
    ).filter(single | several)


def blind_for(*, user: AnyUser, result_ref: str = "pk") -> Exists:
    """An Exists for a Result queryset (`result_ref` names the result's id in the
    outer query): true for rows blind to `user`. It makes no role check: callers
    go through `blind_run_split` (or check the role themselves)."""
    return Exists(_blind_entries(user=user).filter(result_id=OuterRef(result_ref)))


def blind_run_split(
    qs: QuerySet[Result], *, user: AnyUser, run: Run
) -> tuple[QuerySet[Result], int]:
    """`qs` (results of `run`) without those blind to `user`, and how many results
    of the whole run are blind to them: counted over the run, never the filter, so
    a filter on the judge's values cannot tell how the hidden ones were judged.

    One query (the count, driven by the blind queues' entries of the run) when the
    user may answer; the filter is added only when something is blind, so runs
    without blind queues pay no NOT EXISTS per row."""
    if not _can_answer(
        user=user, project_id=run.project_id, project=_loaded_project(run)
    ):
        return qs, 0
    hidden = (
        _blind_entries(user=user)
        .filter(result__run_id=run.pk)
        .values("result_id")
        .distinct()
        .count()
    )
    if not hidden:
        return qs, 0
    return qs.filter(~blind_for(user=user)), hidden


def blind_result_ids(
    *,
    user: AnyUser,
    project_id: int,
    result_ids: Iterable[int] | None = None,
    project: Any = None,
) -> set[int]:
    """The ids of the project's results blind to `user`, among `result_ids` when
    given (a page or an endpoint masks these)."""
    if not _can_answer(user=user, project_id=project_id, project=project):
        return set()
    entries = _blind_entries(user=user).filter(queue__project_id=project_id)
    if result_ids is not None:
        ids = list(result_ids)
        if not ids:
            return set()
        entries = entries.filter(result_id__in=ids)
    return set(entries.values_list("result_id", flat=True))


@dataclass(frozen=True)
class BlindEntry:
    """Where a blind result waits for the user's answer: the note's link."""

    queue_id: int
    queue_name: str
    position: int
    url: str


def blind_entry_for(
    *, user: AnyUser, result: Result, project: Any = None
) -> BlindEntry | None:
    """The first blind queue entry of `result` that `user` has not answered, or None
    when the result is not blind to them."""
    project_id = result.run.project_id
    if not _can_answer(
        user=user, project_id=project_id, project=project or _loaded_project(result)
    ):
        return None

    def build(v: Mapping[str, int]) -> QuerySet[Any]:
        return (
            _blind_entries(user=User(pk=v["user"]))
            .filter(result_id=v["result"], queue__project_id=v["project"])
            .order_by("queue_id", "position")
            .values_list("queue_id", "queue__name", "position")[:1]
        )

    # Compiled once: building and compiling it took 4-8 ms of CPU on every queue
    # card (8.3 ms at load 7), the database under 1 ms to answer (bench_million's
    # 3rd answer via the card).
    rows = compiled_once(
        "blind_entry_for",
        build,
        {"user": cast(int, user.pk), "result": result.pk, "project": project_id},
    )
    if not rows:
        return None
    queue_id, queue_name, position = rows[0]
    url = reverse("review:queue", args=[project_id, queue_id])
    return BlindEntry(
        queue_id=queue_id,
        queue_name=queue_name,
        position=position,
        url=f"{url}?pos={position}",
    )


def result_is_blind(*, user: AnyUser, result: Result) -> bool:
    return blind_entry_for(user=user, result=result) is not None


BLIND_NOTE = "hidden until you answer it in blind queue"


def blind_message(entry: BlindEntry) -> str:
    """The plain note shown (or returned by the API) instead of the judge."""
    return f"Judge and review {BLIND_NOTE} “{entry.queue_name}” (#{entry.position})."


def audit_mask_blind(
    events: Iterable[AuditEvent],
    *,
    user: AnyUser,
    project_id: int,
    project: Any = None,
) -> list[AuditEvent]:
    """The events, with the summary and before/after values of those about a result
    blind to `user` replaced by a note (who did what kind of change, and when, stay:
    they say nothing of the verdict). Masks the instances in memory only."""
    events = list(events)
    blind = blind_result_ids(
        user=user,
        project_id=project_id,
        result_ids={e.result_id for e in events if e.result_id is not None},
        project=project,
    )
    for event in events:
        if event.result_id in blind:
            event.summary = f"Details {BLIND_NOTE}."
            event.before = None
            event.after = None
    return events


# What an API row of a blind result leaves out: the judge's output, the final fields
# (final = judge until someone reviews), the human verdict and who gave it, the
# overrides and the judge calls.
_NULLED = (
    "analysis",
    "final_analysis",
    "judge_score",
    "judge_passed",
    "judge_answers",
    "judge_uncertainty",
    "final_score",
    "final_passed",
    "human_passed",
    "reviewed_by",
    "reviewed_at",
)
_EMPTIED = {"reason": "", "overrides": [], "calls": []}


def result_out_mask(out: dict[str, Any], entry: BlindEntry) -> dict[str, Any]:
    """An API result dict with the blind fields masked and `blind` saying why."""
    masked = dict(out)
    for key in _NULLED:
        if key in masked:
            masked[key] = None
    for key, empty in _EMPTIED.items():
        if key in masked:
            masked[key] = empty
    masked["blind"] = blind_message(entry)
    return masked


def results_mask(
    results: Iterable[Result | None],
    *,
    user: AnyUser,
    project_id: int,
    project: Any = None,
) -> None:
    """Blank the judge's and the final fields of the results blind to `user`, in
    memory only (a page that lists results beside others: compare's side by side)."""
    present = [r for r in results if r is not None]
    blind = blind_result_ids(
        user=user,
        project_id=project_id,
        result_ids={r.pk for r in present},
        project=project,
    )
    for result in present:
        if result.pk in blind:
            result.judge_score = result.final_score = None
            result.judge_passed = result.final_passed = result.human_passed = None
            result.judge_answers = result.judge_uncertainty = None
            result.analysis = result.final_analysis = None
            result.reason = ""
