"""What waits for a reviewer: per queue, the items they can answer and have not,
and their assigned results that sit in no queue. Read for the navigation badge on
every project page, so it is one query (four grouped counts in a UNION)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)

from evalsite.accounts.models import REVIEW_ROLES, Membership
from evalsite.evals.models import Result, Run
from evalsite.review.models import (
    PairwiseItem,
    Preference,
    QueueEntry,
    QueueFlag,
    Review,
    ReviewQueue,
)

# Row kinds of the UNION below.
_ENTRIES, _PAIRS, _ASSIGNED, _ASSIGNED_QUEUED = 1, 2, 3, 4


@dataclass(frozen=True)
class Waiting:
    """Items waiting for one reviewer in one project. `by_queue` counts queue items
    (a result in two queues waits in both); `assigned` the assigned results in no
    queue; `total` both."""

    by_queue: dict[int, int] = field(default_factory=dict)
    assigned: int = 0

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


def waiting_entries(*, project_id: int, user: User) -> QuerySet[QueueEntry]:
    """Review-queue entries `user` can answer and has not: the result is judged
    (errored results cannot be reviewed) and not flagged; in a single-review queue
    the result is not reviewed yet and is assigned to nobody or to `user` (one
    assigned to a teammate waits for them); in an overlap queue the entry still
    takes answers and `user` has not given theirs."""
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
    overlap = Q(queue__overlap__gt=1, state=QueueEntry.State.OPEN) & ~Exists(answered)
    return QueueEntry.objects.filter(
        _can_review(project_id=project_id, user=user),
        single | overlap,
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


class _Among(Func):
    """`column IN (subquery)`, written `column = ANY(ARRAY(subquery))` on Postgres:
    the subquery's ids are read once and become an index condition, where IN joins
    them to every row. waiting_for's query for the bench reviewer's 49k assigned
    results (bench_results_matrix) took 15.9 ms with IN, 3.4 ms so (min of 20,
    machine load ~7.5)."""

    arity = 2
    conditional = True
    output_field = BooleanField()

    def __init__(self, column: str, ids: QuerySet[Any], **extra: Any) -> None:
        super().__init__(F(column), Subquery(ids), **extra)

    def _parts(self, compiler: Any) -> tuple[str, str, list[Any]]:
        column, column_params = compiler.compile(self.source_expressions[0])
        ids, ids_params = compiler.compile(self.source_expressions[1])
        return column, ids, [*column_params, *ids_params]

    def as_sql(self, compiler: Any, connection: Any, *args: Any, **extra: Any) -> Any:
        column, ids, params = self._parts(compiler)
        return f"{column} IN {ids}", params

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        column, ids, params = self._parts(compiler)
        return f"{column} = ANY(ARRAY{ids})", params


def _assigned(*, project_id: int, user: User) -> QuerySet[Result]:
    """Results assigned to `user`, judged and not reviewed, of the project's live
    runs, whether in a queue or not."""
    live_runs = Run.objects.filter(project_id=project_id, archived=False)
    return Result.objects.filter(
        _Among("run_id", live_runs.order_by().values("id")),
        assignee_id=user.pk,
        reviewed=False,
        status=Result.Status.OK,
    )


def waiting_for(*, project_id: int, user: User | AnonymousUser) -> Waiting:
    """Everything waiting for `user` in the project, in one query."""
    if not user.is_authenticated:
        return Waiting()
    assert isinstance(user, User)
    entries = (
        waiting_entries(project_id=project_id, user=user)
        .values("queue_id")
        .annotate(kind=Value(_ENTRIES, IntegerField()), n=Count("id"))
        .values_list("kind", "queue_id", "n")
        .order_by()
    )
    pairs = (
        waiting_pairs(project_id=project_id, user=user)
        .values("queue_id")
        .annotate(kind=Value(_PAIRS, IntegerField()), n=Count("id"))
        .values_list("kind", "queue_id", "n")
        .order_by()
    )
    # The assigned results in no queue, counted as all of them less those in a
    # queue: a NOT EXISTS on the queue entries per assigned result made this branch
    # 23.6 ms instead of 13.2 for the bench reviewer's 49k (bench_results_matrix,
    # min of 10, load ~9), where the queued ones are found from the queue entries.
    can_review = _can_review(project_id=project_id, user=user)
    assigned_results = _assigned(project_id=project_id, user=user)
    assigned = (
        assigned_results.filter(can_review)
        .annotate(
            kind=Value(_ASSIGNED, IntegerField()),
            no_queue=Value(0, IntegerField()),
        )
        .values("kind", "no_queue")
        .annotate(n=Count("id"))
        .values_list("kind", "no_queue", "n")
        .order_by()
    )
    assigned_queued = (
        QueueEntry.objects.filter(can_review, result__in=assigned_results)
        .annotate(
            kind=Value(_ASSIGNED_QUEUED, IntegerField()),
            no_queue=Value(0, IntegerField()),
        )
        .values("kind", "no_queue")
        .annotate(n=Count("result_id", distinct=True))
        .values_list("kind", "no_queue", "n")
        .order_by()
    )
    by_queue: dict[int, int] = {}
    assigned_n = 0
    rows = entries.union(pairs, assigned, assigned_queued, all=True)
    for kind, queue_id, n in rows:
        if kind == _ASSIGNED:
            assigned_n += n
        elif kind == _ASSIGNED_QUEUED:
            assigned_n -= n
        elif n:
            by_queue[queue_id] = by_queue.get(queue_id, 0) + n
    return Waiting(by_queue=by_queue, assigned=assigned_n)


def queue_next_waiting(*, queue: ReviewQueue, user: User, after: int) -> int | None:
    """Position of the next item of the queue waiting for `user` after `after`,
    wrapping to the start, never `after` itself: where Skip goes (the skipped item
    still waits and comes round again after the others). None when nothing else
    waits."""
    items: QuerySet[QueueEntry] | QuerySet[PairwiseItem]
    if queue.is_pairwise:
        items = waiting_pairs(project_id=queue.project_id, user=user)
    else:
        items = waiting_entries(project_id=queue.project_id, user=user)
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
    flags = QueueFlag.objects.filter(queue=queue, resolved_at__isnull=True)
    if queue.is_pairwise:
        flags = flags.filter(pair__position=position)
    else:
        flags = flags.filter(entry__position=position)
    return flags.select_related("flagged_by").first()
