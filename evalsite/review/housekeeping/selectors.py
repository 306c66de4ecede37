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
from evalsite.lib.cascade import Cascade, cascade_collect
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
    # Whether a large deletion of it goes to a worker (the model has `deleting`).
    # Scorers and judges take only their own versions and scorers with them (run
    # scorers keep their rows and lose the link): never a request's worth of rows.
    background: bool


KIND_INFO: dict[Kind, KindInfo] = {
    "runs": KindInfo(Run, "run", False, "evals:runs", True),
    "datasets": KindInfo(Dataset, "dataset", False, "datasets:list", True),
    "scorers": KindInfo(ScorerConfig, "scorer", False, "evals:scorers", False),
    "judges": KindInfo(JudgeConnection, "judge", True, "evals:judges", False),
    "queues": KindInfo(ReviewQueue, "queue", False, "review:assigned", True),
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


def row_label(model: type[models.Model]) -> str:
    """What the confirmation page calls the rows of `model`."""
    return _LABELS.get(model, str(model._meta.verbose_name_plural))


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
    cascade: Cascade | None = None
    # Handed to a worker (too many rows for a request): nothing is counted or
    # deleted yet, the object is marked `deleting`.
    background: bool = False

    def set_counts(
        self,
        removed: dict[type[models.Model], int],
        unlinked: list[tuple[models.ForeignKey[Any, Any], int]],
    ) -> None:
        """The lines of the page from rows per model that go and rows per key that
        are set to null: one line per label (a lab replay's two lists of runs are
        two tables of one name), the object's own first."""
        own = KIND_INFO[self.kind].model
        order = [own, *(m for m in _LABELS if m is not own)]
        lines: Counter[str] = Counter()
        for model in order + [m for m in removed if m not in _LABELS]:
            lines[row_label(model)] += removed.get(model, 0)
        self.removals = [Line(label, n) for label, n in lines.items() if n]
        lines = Counter()
        for fk, n in unlinked:
            lines[
                f"{row_label(fk.model)} keep their rows but lose their “{fk.verbose_name}” link"
            ] += n
        self.unlinks = [Line(label, n) for label, n in lines.items() if n]

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


def _cascade(kind: Kind, obj: Any) -> Cascade:
    """What deleting `obj` deletes: the object, and first what it protects that goes
    with it on purpose (a dataset's runs, a judge's scorers), or every version of
    a scorer; and all that cascades from them."""
    own = type(obj)._base_manager.filter(pk=obj.pk)
    roots: list[QuerySet[Any]] = [own]
    if kind == "datasets":
        roots.append(Run.objects.filter(dataset=obj))
    elif kind == "judges":
        roots.append(ScorerConfig.objects.filter(judge=obj))
    elif kind == "scorers":
        roots = [
            ScorerConfig.objects.filter(pk__in=[s.pk for s in scorer_lineage(obj)])
        ]
    return cascade_collect(roots=roots, using=router.db_for_write(type(obj)))


def deletion_plan(*, kind: Kind, obj: Any, count: bool = True) -> DeletionPlan:
    """Everything deleting `obj` deletes, counted from the rows themselves (a COUNT
    per table of the querysets the deletion deletes, so the page and the deletion
    agree), what keeps its rows but loses a link, and what stops the deletion now.
    With count=False nothing is counted: the deletion sets the counts to the rows
    it deleted."""
    plan = DeletionPlan(kind=kind, obj=obj, name=object_label(kind, obj))
    plan.blockers, plan.closed_queues = _blockers(kind, obj)
    plan.cascade = _cascade(kind, obj)
    if count:
        cascade = plan.cascade
        plan.set_counts(
            {model: cascade.count(model) for model in cascade.paths},
            [(fk, cascade.count_unlinked(fk)) for fk, _ in cascade.unlinks],
        )
    return plan


def project_of(obj: Any) -> Project:
    project: Project = obj.project
    return project
