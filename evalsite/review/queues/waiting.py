"""What waits for a reviewer: per queue, the items they can answer and have not,
and their assigned results that sit in no queue. Read for the navigation badge on
every project page, so it is two queries: the project's open queues and runs, then
one grouped count per part in a UNION."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)

from evalsite.accounts.models import REVIEW_ROLES, Membership
from evalsite.evals.models import Result, Run
from evalsite.lib.db import compiled_once
from evalsite.review.models import (
    PairwiseItem,
    Preference,
    QueueEntry,
    QueueFlag,
    Review,
    ReviewQueue,
)

# Row kinds of the UNION below.
_ENTRIES, _PAIRS, _ASSIGNED = 1, 2, 3


@dataclass(frozen=True)
class Waiting:
    """Items waiting for one reviewer in one project. `by_queue` counts queue items
    (a result in two queues waits in both); `assigned` the assigned results in no
    queue; `total` both."""

    by_queue: dict[int, int] = field(default_factory=dict)
    assigned: int = 0
    # With `waiting_for(around=...)`: the position Skip leads to from there (see
    # `queue_next_waiting`), None when nothing else waits.
    following: int | None = None

    @property
    def queued(self) -> int:
        return sum(self.by_queue.values())

    @property
    def total(self) -> int:
        return self.queued + self.assigned


def _can_review(*, project_id: int, user: User) -> Exists:
    """Viewers answer nothing, so nothing waits for them. An uncorrelated EXISTS:
    evaluated once per query."""
    return Exists(
        Membership.objects.filter(
            project_id=project_id, user_id=user.pk, role__in=REVIEW_ROLES
        )
    )


def waiting_entries(
    *, project_id: int, user: User, overlap: bool | None = None
) -> QuerySet[QueueEntry]:
    """Review-queue entries `user` can answer and has not: the result is judged
    (errored results cannot be reviewed) and not flagged; in a single-review queue
    the result is not reviewed yet and is assigned to nobody or to `user` (one
    assigned to a teammate waits for them); in an overlap queue the entry still
    takes answers and `user` has not given theirs. `overlap` True or False: only
    the overlap or only the single-review queues' entries.

    Each kind on its own is what keeps this cheap: with the two conditions OR-ed the
    planner joined every entry of every queue to its result before it could tell
    the kinds apart (the navigation badge took 760-1000 ms on bench_million's
    50k-entry overlap-3 queue, at load 7-11), whereas the overlap kind alone reads
    only the open entries through the (queue, state) index (under 1 ms)."""
    answered = Review.objects.filter(
        queue_id=OuterRef("queue_id"),
        result_id=OuterRef("result_id"),
        reviewer_id=user.pk,
        kind=Review.Kind.ANSWER,
    )
    flagged = QueueFlag.objects.filter(
        entry_id=OuterRef("pk"), resolved_at__isnull=True
    )
    single = Q(queue__overlap=1, result__reviewed=False) & (
        Q(result__assignee__isnull=True) | Q(result__assignee_id=user.pk)
    )
    several = Q(queue__overlap__gt=1, state=QueueEntry.State.OPEN) & ~Exists(answered)
    kind = {None: single | several, False: single, True: several}[overlap]
    return QueueEntry.objects.filter(
        _can_review(project_id=project_id, user=user),
        kind,
        ~Exists(flagged),
        queue__project_id=project_id,
        # An archived queue is closed: nothing in it waits for anyone.
        queue__archived=False,
        queue__kind=ReviewQueue.Kind.REVIEW,
        result__status=Result.Status.OK,
    )


def waiting_pairs(*, project_id: int, user: User) -> QuerySet[PairwiseItem]:
    """Pairs still taking answers that `user` has not answered, not flagged."""
    answered = Preference.objects.filter(pair_id=OuterRef("pk"), reviewer_id=user.pk)
    flagged = QueueFlag.objects.filter(pair_id=OuterRef("pk"), resolved_at__isnull=True)
    return PairwiseItem.objects.filter(
        _can_review(project_id=project_id, user=user),
        ~Exists(answered),
        ~Exists(flagged),
        queue__project_id=project_id,
        queue__archived=False,
        answers__lt=F("queue__overlap"),
    )


def waiting_assigned(
    *, project_id: int, user: User, run_ids: list[int]
) -> QuerySet[Result]:
    """Results assigned to `user`, judged and not reviewed, that are in no review
    queue (those in one are counted with the queue), of the runs `run_ids` (the
    project's open runs, see `_open_parts`).

    The runs come as a list: joined to the runs instead, the planner guessed a few
    hundred rows and probed the queue entries once per result; with the list it
    counts the covering partial index review_result_assigned_waiting_idx in id order
    against the entries' result index (one merge anti join). bench_million (89k
    results assigned to the reviewer, EXPLAIN ANALYZE at load 7-11): 710 ms before,
    215 ms with the index alone, 85 ms with both."""
    in_queue = QueueEntry.objects.filter(result_id=OuterRef("pk"))
    return Result.objects.filter(
        _can_review(project_id=project_id, user=user),
        ~Exists(in_queue),
        run_id__in=run_ids,
        assignee_id=user.pk,
        reviewed=False,
        status=Result.Status.OK,
    )


# Row kinds of `_open_parts`' query.
_SINGLE, _OVERLAP, _PAIRWISE, _RUN = 1, 2, 3, 4


def _open_parts(*, project_id: int) -> dict[int, list[int]]:
    """The project's open queues by kind (_SINGLE, _OVERLAP, _PAIRWISE) and its open
    runs (_RUN), ids each, in one query. Given as lists, they let `waiting_for` leave
    out what the project does not have and give the planner the real row counts:
    asked through joins, Postgres started a parallel worker for the single-review
    part even with no such queue (62 ms of a 142 ms count on bench_million at load
    9, for 0.1 ms of work)."""

    def build(v: Mapping[str, int]) -> QuerySet[Any]:
        kind = Case(
            When(kind=ReviewQueue.Kind.PAIRWISE, then=Value(_PAIRWISE)),
            When(overlap__gt=1, then=Value(_OVERLAP)),
            default=Value(_SINGLE),
            output_field=IntegerField(),
        )
        queues = (
            ReviewQueue.objects.filter(project_id=v["project"], archived=False)
            .annotate(part=kind)
            .values_list("part", "pk")
            .order_by()
        )
        runs = (
            Run.objects.filter(project_id=v["project"], archived=False)
            .annotate(part=Value(_RUN, IntegerField()))
            .values_list("part", "pk")
            .order_by()
        )
        return queues.union(runs, all=True)

    parts: dict[int, list[int]] = {_SINGLE: [], _OVERLAP: [], _PAIRWISE: [], _RUN: []}
    # Compiled once (see `waiting_for`): 2-3 ms of CPU per page at load 7-12.
    for part, pk in compiled_once("open_parts", build, {"project": project_id}):
        parts[part].append(pk)
    return parts


def _grouped(
    items: QuerySet[Any], kind: int, around: tuple[int, int] | None = None
) -> QuerySet[Any]:
    """(kind, queue id, count, first position after, first position before) rows per
    queue; the positions only for the queue and position `around` (queue id,
    position), else None."""
    later: Any = Value(None, IntegerField())
    earlier: Any = Value(None, IntegerField())
    if around is not None:
        queue_id, position = around
        later = Min("position", filter=Q(queue_id=queue_id, position__gt=position))
        earlier = Min("position", filter=Q(queue_id=queue_id, position__lt=position))
    rows: QuerySet[Any] = (
        items.values("queue_id")
        .annotate(
            kind=Value(kind, IntegerField()),
            n=Count("id"),
            later=later,
            earlier=earlier,
        )
        .values_list("kind", "queue_id", "n", "later", "earlier")
        .order_by()
    )
    return rows


def _waiting_counts(
    *,
    project_id: int,
    user: User,
    parts: dict[int, list[int]],
    around: tuple[int, int] | None,
) -> QuerySet[Any]:
    """`waiting_for`'s one query: a grouped count per part the project has (see
    `_open_parts`), in a UNION."""
    counts: list[QuerySet[Any]] = []
    for overlap, part in ((False, _SINGLE), (True, _OVERLAP)):
        if parts[part]:
            entries = waiting_entries(
                project_id=project_id, user=user, overlap=overlap
            ).filter(queue_id__in=parts[part])
            counts.append(_grouped(entries, _ENTRIES, around))
    if parts[_PAIRWISE]:
        pairs = waiting_pairs(project_id=project_id, user=user).filter(
            queue_id__in=parts[_PAIRWISE]
        )
        counts.append(_grouped(pairs, _PAIRS, around))
    if parts[_RUN]:
        assigned = waiting_assigned(
            project_id=project_id, user=user, run_ids=parts[_RUN]
        )
        counts.append(
            assigned.annotate(
                kind=Value(_ASSIGNED, IntegerField()),
                no_queue=Value(0, IntegerField()),
            )
            .values("kind", "no_queue")
            .annotate(
                n=Count("id"),
                later=Value(None, IntegerField()),
                earlier=Value(None, IntegerField()),
            )
            .values_list("kind", "no_queue", "n", "later", "earlier")
            .order_by()
        )
    return counts[0].union(*counts[1:], all=True)


def waiting_for(
    *,
    project_id: int,
    user: User | AnonymousUser,
    around: tuple[int, int] | None = None,
) -> Waiting:
    """Everything waiting for `user` in the project, in two queries: the project's
    open queues and runs, then one grouped count per part it has, in a UNION.

    `around` (queue id, position): also where Skip leads from that card
    (`Waiting.following`, as `queue_next_waiting` gives it), read in the same scan
    as the queue's count, whose filter is Skip's: the card drew both with a scan of
    the queue's open entries each (bench_million's 50k-entry overlap-3 queue: the
    badge 2-14 ms and Skip's 6-7 ms, at load 2-6)."""
    if not user.is_authenticated:
        return Waiting()
    assert isinstance(user, User)
    parts = _open_parts(project_id=project_id)
    if not any(parts.values()):
        return Waiting()
    values = {"project": project_id, "user": user.pk}
    if around is not None:
        values.update(around_queue=around[0], around_position=around[1])
    for part, ids in parts.items():
        values.update({f"{part}:{i}": pk for i, pk in enumerate(ids)})

    def build(v: Mapping[str, int]) -> QuerySet[Any]:
        return _waiting_counts(
            project_id=v["project"],
            user=User(pk=v["user"]),
            parts={
                part: [v[f"{part}:{i}"] for i in range(len(ids))]
                for part, ids in parts.items()
            },
            around=(v["around_queue"], v["around_position"])
            if around is not None
            else None,
        )

    # Compiled once per shape (the parts' sizes): building and compiling the UNION
    # of grouped subqueries took 8-9 ms of CPU per card (17.5 ms at load 7), the
    # database 1-4 ms to answer it (bench_million's 3rd answer via the card).
    shape = ("waiting_for", tuple(len(ids) for ids in parts.values()), around is None)
    rows = compiled_once(shape, build, values)
    by_queue: dict[int, int] = {}
    assigned_n = 0
    following = None
    for kind, queue_id, n, later, earlier in rows:
        if kind == _ASSIGNED:
            assigned_n += n
        elif n:
            by_queue[queue_id] = by_queue.get(queue_id, 0) + n
        if around is not None and queue_id == around[0]:
            # The later items first, then (wrapping) the earlier ones.
            following = later if later is not None else earlier
    return Waiting(by_queue=by_queue, assigned=assigned_n, following=following)


def queue_next_waiting(*, queue: ReviewQueue, user: User, after: int) -> int | None:
    """Position of the next item of the queue waiting for `user` after `after`,
    wrapping to the start, never `after` itself: where Skip goes (the skipped item
    still waits and comes round again after the others). None when nothing else
    waits."""
    items: QuerySet[QueueEntry] | QuerySet[PairwiseItem]
    if queue.is_pairwise:
        items = waiting_pairs(project_id=queue.project_id, user=user)
    else:
        items = waiting_entries(
            project_id=queue.project_id, user=user, overlap=queue.overlap > 1
        )
    # One read: the later items first, then (wrapping) the earlier ones.
    wrapped = Case(
        When(position__lt=after, then=1), default=0, output_field=IntegerField()
    )
    return (
        items.filter(queue_id=queue.pk)
        .exclude(position=after)
        .order_by(wrapped, "position")
        .values_list("position", flat=True)
        .first()
    )


def queue_open_flag(*, queue: ReviewQueue, position: int) -> QueueFlag | None:
    """The open flag on the item at `position`, if any."""

    def build(v: Mapping[str, int]) -> QuerySet[QueueFlag]:
        flags = QueueFlag.objects.filter(queue_id=v["queue"], resolved_at__isnull=True)
        if queue.is_pairwise:
            flags = flags.filter(pair__position=v["position"])
        else:
            flags = flags.filter(entry__position=v["position"])
        # [:1] with the model's ordering: what .first() reads.
        return flags.select_related("flagged_by")[:1]

    # Compiled once (see `waiting_for`): 1-2 ms of CPU of every queue card.
    found = compiled_once(
        ("queue_open_flag", queue.is_pairwise),
        build,
        {"queue": queue.pk, "position": position},
    )
    return found[0] if found else None
