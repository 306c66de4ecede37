"""What archiving and deleting may touch: the objects by kind, the user-scoped
lookup, and a deletion's plan (everything that goes with the object, counted, and
what keeps it from being deleted)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from django.contrib.auth.models import AnonymousUser, User
from django.db import models, router
from django.db.models import Q, QuerySet
from django.db.models.deletion import PROTECT, Collector
from django.http import Http404
from django.urls import register_converter

from evalsite.accounts.models import Project
from evalsite.accounts.selectors import project_get_for_user
from evalsite.datasets.models import Dataset, DatasetMatch, DatasetMatchPair, Item
from evalsite.evals.models import (
    Comment,
    JudgeCall,
    JudgeConnection,
    Override,
    Result,
    ReviewVersion,
    Run,
    RunScorer,
    ScorerConfig,
)
from evalsite.evals.runs.services import ACTIVE
from evalsite.review.models import (
    Guideline,
    PairwiseItem,
    Preference,
    QueueEntry,
    Review,
    ReviewQueue,
)

AnyUser = User | AnonymousUser
Kind = Literal["runs", "datasets", "scorers", "judges", "queues"]
KINDS: tuple[Kind, ...] = ("runs", "datasets", "scorers", "judges", "queues")


@dataclass(frozen=True)
class KindInfo:
    model: type[models.Model]
    noun: str  # "run": the object's type in the audit log and in messages
    # Archiving needs the role that creates the object: owners for judge
    # connections, any reviewer for the rest.
    archive_needs_owner: bool
    list_url: str  # the URL name of the object's list page


KIND_INFO: dict[Kind, KindInfo] = {
    "runs": KindInfo(Run, "run", False, "evals:runs"),
    "datasets": KindInfo(Dataset, "dataset", False, "datasets:list"),
    "scorers": KindInfo(ScorerConfig, "scorer", False, "evals:scorers"),
    "judges": KindInfo(JudgeConnection, "judge", True, "evals:judges"),
    "queues": KindInfo(ReviewQueue, "queue", False, "review:assigned"),
}

# What the confirmation page calls each kind of row that goes.
_LABELS: dict[type[models.Model], str] = {
    Run: "runs",
    RunScorer: "run scorers",
    Result: "results",
    JudgeCall: "judge calls",
    Override: "overrides",
    Comment: "comments",
    ReviewVersion: "review counters",
    ReviewQueue: "review queues",
    QueueEntry: "queue entries",
    Review: "reviews and answers",
    Guideline: "queue guidelines",
    PairwiseItem: "pairwise pairs",
    Preference: "pairwise answers",
    Dataset: "dataset versions",
    Item: "items",
    DatasetMatch: "dataset matchings",
    DatasetMatchPair: "matched item pairs",
    ScorerConfig: "scorer versions",
    JudgeConnection: "judge connections",
}


class HousekeepingKind:
    """The URL segment naming a kind ("runs", "judges"…): anything else is no match."""

    regex = "|".join(KINDS)

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


# For the pages' URLs and the API's: only the five kinds match, so the catch-all
# shape ("projects/1/<kind>/2") leaves every other app's URLs alone.
register_converter(HousekeepingKind, "housekeeping_kind")


def kind_of(value: str) -> Kind:
    for kind in KINDS:
        if kind == value:
            return kind
    raise Http404("No such kind of object.")


def housekeeping_get_for_user(
    *,
    user: AnyUser,
    kind: Kind,
    pk: int,
    project_id: int | None = None,
    write: bool = False,
    manage: bool = False,
) -> Any:
    """The object of `kind` with `pk`, with `.project` (and its `.membership`) set:
    404 when it does not exist, belongs to another project than `project_id` or
    the user is not a member of its project; 403 when the role is too low."""
    model = KIND_INFO[kind].model
    obj: Any = model._default_manager.filter(pk=pk).first()
    if obj is None or (project_id is not None and obj.project_id != project_id):
        raise Http404(f"No such {KIND_INFO[kind].noun}.")
    obj.project = project_get_for_user(
        user=user, pk=obj.project_id, write=write, manage=manage
    )
    return obj


def archive_needs_owner(kind: Kind) -> bool:
    return KIND_INFO[kind].archive_needs_owner


def object_label(kind: Kind, obj: Any) -> str:
    """The name a user types to confirm a deletion, and the audit log keeps."""
    if kind == "judges" or kind == "queues":
        return str(obj.name)
    return str(obj)


class _Collector(Collector):
    """Django's deletion collector, except that a protected reference from an object
    that is itself being deleted (a dataset's runs, a judge's scorers: collected
    first, on purpose) does not stop the deletion."""

    def related_objects(
        self, related_model: Any, related_fields: Any, objs: Any
    ) -> QuerySet[Any]:
        qs = super().related_objects(related_model, related_fields, objs)
        if any(f.remote_field.on_delete is PROTECT for f in related_fields):
            taken = [o.pk for o in self.data.get(related_model, ())]
            if taken:
                qs = qs.exclude(pk__in=taken)
        return qs


@dataclass
class Line:
    label: str
    count: int


@dataclass
class DeletionPlan:
    kind: Kind
    obj: Any
    name: str
    # What goes (rows by kind, the object's own first), what loses a link to it but
    # stays, and why it cannot go now (empty: it can).
    removals: list[Line] = field(default_factory=list)
    unlinks: list[Line] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    # Closed queues of the deleted runs, which go with them (named on the page).
    closed_queues: list[str] = field(default_factory=list)
    collector: Collector | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {line.label: line.count for line in self.removals}

    @property
    def total(self) -> int:
        return sum(line.count for line in self.removals)


def scorer_lineage(scorer: ScorerConfig) -> list[ScorerConfig]:
    """Every version of a scorer: its parents and the versions made from it."""
    found: dict[int, ScorerConfig] = {scorer.pk: scorer}
    frontier = [scorer]
    while frontier:
        ids = [s.pk for s in frontier]
        parents = {s.parent_id for s in frontier if s.parent_id} - set(found)
        nearby = ScorerConfig.objects.filter(
            Q(parent_id__in=ids) | Q(pk__in=parents), project_id=scorer.project_id
        )
        frontier = [s for s in nearby if s.pk not in found]
        found.update((s.pk, s) for s in frontier)
    return sorted(found.values(), key=lambda s: s.pk)


def _runs_going(kind: Kind, obj: Any) -> QuerySet[Run]:
    if kind == "runs":
        return Run.objects.filter(pk=obj.pk)
    if kind == "datasets":
        return Run.objects.filter(dataset=obj)
    return Run.objects.none()


def _blockers(kind: Kind, obj: Any) -> tuple[list[str], list[str]]:
    """(Why the object cannot be deleted now, the closed queues that go with it)."""
    blockers: list[str] = []
    runs = _runs_going(kind, obj)
    for run in runs.filter(status__in=ACTIVE).order_by("pk"):
        blockers.append(
            f"Run “{run}” (#{run.pk}) is {run.get_status_display().lower()}: "
            "cancel it or let it finish first."
        )
    queues = ReviewQueue.objects.filter(
        Q(run__in=runs.values("pk")) | Q(run_b__in=runs.values("pk"))
    ).order_by("pk")
    closed: list[str] = []
    for queue in queues:
        if queue.archived:
            closed.append(f"“{queue.name}” (#{queue.pk})")
        else:
            blockers.append(
                f"The open review queue “{queue.name}” (#{queue.pk}) needs "
                f"{'this run' if kind == 'runs' else 'a run on this dataset'}: "
                "archive the queue (which closes it) first."
            )
    if kind in ("scorers", "judges"):
        if kind == "scorers":
            uses = Q(run_scorers__scorer__in=[s.pk for s in scorer_lineage(obj)])
        else:
            uses = Q(run_scorers__judge=obj) | Q(run_scorers__scorer__judge=obj)
        for run in (
            Run.objects.filter(uses, status__in=ACTIVE).distinct().order_by("pk")
        ):
            blockers.append(
                f"Run “{run}” (#{run.pk}) is {run.get_status_display().lower()} "
                f"with this {KIND_INFO[kind].noun}: cancel it or let it finish first."
            )
    if kind == "judges" and obj.is_offline:
        blockers.append(
            "The built-in offline judge cannot be deleted; archive it to hide it."
        )
    return blockers, closed


def _collector(kind: Kind, obj: Any) -> _Collector:
    collector = _Collector(using=router.db_for_write(type(obj)), origin=obj)
    targets: list[Any] = [obj]
    if kind == "datasets":
        runs = list(Run.objects.filter(dataset=obj))
        if runs:
            collector.collect(runs)
            collector.add_dependency(Dataset, Run)
    elif kind == "judges":
        scorers = list(ScorerConfig.objects.filter(judge=obj))
        if scorers:
            collector.collect(scorers)
            collector.add_dependency(JudgeConnection, ScorerConfig)
    elif kind == "scorers":
        targets = scorer_lineage(obj)
    collector.collect(targets)
    return collector


def _going_pks(collector: Collector, model: type[models.Model]) -> Q:
    """A filter for the rows of `model` the collector deletes."""
    q = Q(pk__in=[o.pk for o in collector.data.get(model, ())])
    for fast in collector.fast_deletes:
        if fast.model is model:
            q |= Q(pk__in=fast.values("pk"))
    return q


def _unlinks(collector: Collector) -> list[Line]:
    """The rows that stay but lose their link (SET_NULL) to what goes."""
    lines: Counter[str] = Counter()
    for (fk, _value), batches in collector.field_updates.items():
        model = fk.model
        q = Q(pk__in=[])
        batch: Any
        for batch in batches:
            if isinstance(batch, QuerySet):
                q |= Q(pk__in=batch.values("pk"))
            else:
                q |= Q(pk__in=[o.pk for o in batch])
        count = (
            model._base_manager.filter(q).exclude(_going_pks(collector, model)).count()
        )
        if count:
            label = f"{_LABELS.get(model, model._meta.verbose_name_plural)} keep their rows but lose their “{fk.verbose_name}” link"
            lines[label] += count
    return [Line(label, n) for label, n in lines.items()]


def deletion_plan(*, kind: Kind, obj: Any) -> DeletionPlan:
    """Everything deleting `obj` deletes, counted from the rows themselves (what
    Django's cascade will delete, so the page and the deletion agree), what keeps
    its rows but loses a link, and what stops the deletion now."""
    plan = DeletionPlan(kind=kind, obj=obj, name=object_label(kind, obj))
    plan.blockers, plan.closed_queues = _blockers(kind, obj)
    collector = _collector(kind, obj)
    counts: Counter[type[models.Model]] = Counter()
    fast_by_model: dict[type[models.Model], list[QuerySet[Any]]] = {}
    for fast in collector.fast_deletes:
        fast_by_model.setdefault(fast.model, []).append(fast)
    for model in {*collector.data, *fast_by_model}:
        fasts = fast_by_model.get(model, [])
        if not fasts:
            counts[model] = len(collector.data.get(model, ()))
        elif len(fasts) == 1 and not collector.data.get(model):
            counts[model] = fasts[0].count()
        else:
            # Reached by several paths (a queue entry by its queue and by its
            # result): each row once.
            counts[model] = (
                model._base_manager.filter(_going_pks(collector, model))
                .distinct()
                .count()
            )
    own = KIND_INFO[kind].model
    order = [own, *(m for m in _LABELS if m is not own)]
    for model in order + [m for m in counts if m not in _LABELS]:
        if counts.get(model):
            label = _LABELS.get(model, str(model._meta.verbose_name_plural))
            plan.removals.append(Line(label, counts[model]))
    plan.unlinks = _unlinks(collector)
    plan.collector = collector
    return plan


def project_of(obj: Any) -> Project:
    project: Project = obj.project
    return project
