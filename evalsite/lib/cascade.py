"""What deleting some rows takes with it, as querysets rather than loaded rows.

Django's deletion Collector follows each foreign key's on_delete rule by loading
every row it cascades through into memory (a run's million results, to collect
their ids). This follows the same rules through the same relations (the ones
`Collector.collect` walks) with querysets instead: what goes is counted with one
COUNT per table and deleted with a DELETE per table and path, children first, so
memory stays flat however many rows go. bench/bench_delete.py, a run of 200k results
(a load average of 5 to 9 on the shared 2 cores): the Collector took 72 s and 221 MB
of peak RSS growth to count it and 87 s to delete it; this takes 1.6-2.8 s and
21-25 s (most of it Postgres checking, at commit, the five foreign keys to each
deleted result), with no measurable RSS growth.

What it supports is what the models use: CASCADE, PROTECT, SET_NULL and DO_NOTHING,
no delete signal receivers, no multi-table inheritance, no generic relations, no
cycle of cascades. Anything else raises ImproperlyConfigured rather than deleting
differently from Django; tests/review/housekeeping/test_cascade.py checks, for every
kind the housekeeping pages delete, that the rows that go and the links set to null
are exactly those of Django's Collector.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import QuerySet, signals
from django.db.models.deletion import (
    CASCADE,
    DO_NOTHING,
    PROTECT,
    SET_NULL,
    ProtectedError,
    get_candidate_relations_to_delete,
)

Model = type[models.Model]


@dataclass(frozen=True)
class _Edge:
    """A foreign key `field` of `child` to `parent`."""

    parent: Model
    child: Model
    field: models.ForeignKey[Any, Any]

    @property
    def on_delete(self) -> Any:
        return self.field.remote_field.on_delete

    def referencing(self, parents: QuerySet[Any]) -> QuerySet[Any]:
        """The rows of `child` whose key names one of `parents`."""
        target = self.field.target_field.attname
        return self.child._base_manager.filter(
            **{f"{self.field.attname}__in": parents.values(target)}
        ).order_by()


def _count(paths: list[QuerySet[Any]], limit: int | None = None) -> int:
    """How many rows are on any of `paths` (of one model), each counted once; with
    `limit`, at most that many (a COUNT of a LIMIT, which stops early)."""
    if len(paths) == 1:
        rows = paths[0]
    else:
        # The primary key's columns, not "pk": a composite key (a matched item
        # pair's) has no single column to compare with IN.
        key = [f.attname for f in paths[0].model._meta.pk_fields]
        first, *rest = (p.values_list(*key) for p in paths)
        rows = first.union(*rest)
    return (rows if limit is None else rows[:limit]).count()


def _excluding(
    paths: list[QuerySet[Any]], others: list[QuerySet[Any]]
) -> list[QuerySet[Any]]:
    """`paths` without the rows on any of `others` (of the same model)."""
    if any(len(p.model._meta.pk_fields) > 1 for p in paths):
        raise ImproperlyConfigured(
            f"{paths[0].model._meta.label} has a composite primary key."
        )
    for other in others:
        paths = [p.exclude(pk__in=other.values("pk")) for p in paths]
    return paths


@dataclass
class Cascade:
    """What goes: per model, parents before children, its rows as querysets, one
    per path from a root (a result by its run, by its run scorer, by its item; a
    row may be on several), evaluated when used, so that a child's rows are found
    through its parents' while those still exist. And per key set to null, the
    rows that stay but lose it, per path too.

    Paths rather than one query per model: a child of a model reached by several
    paths would otherwise find its rows through their UNION, which Postgres builds
    in full (every id of the parent, deduplicated) for each child's query. On the
    200k-result run of bench/bench_delete.py counting its 20k judge calls took
    1.45 s through the UNION of the results' two paths, 0.05 s along one path."""

    using: str
    paths: dict[Model, list[QuerySet[Any]]] = field(default_factory=dict)
    unlinks: list[tuple[models.ForeignKey[Any, Any], list[QuerySet[Any]]]] = field(
        default_factory=list
    )

    def count(self, model: Model, limit: int | None = None) -> int:
        """How many rows of `model` go (at most `limit`)."""
        return _count(self.paths[model], limit)

    def count_unlinked(self, fk: models.ForeignKey[Any, Any]) -> int:
        """How many rows lose their `fk`."""
        return _count(dict(self.unlinks)[fk])

    def exceeds(self, limit: int) -> bool:
        """Whether more than `limit` rows go, all models together: each model's COUNT
        stops at what is left of the limit, so a million rows cost no more than
        `limit` to tell."""
        left = limit
        for paths in self.paths.values():
            # Each path alone first: a UNION is built in full before its LIMIT (the
            # 200k results of a run through their two paths: 0.3-0.6 s, against a
            # few ms along one path, at a load average of 6); only when every path
            # is under the limit, and so small, is their UNION counted.
            counts = [_count([p], left + 1) for p in paths]
            if max(counts) > left:
                return True
            left -= counts[0] if len(paths) == 1 else _count(paths, left + 1)
            if left < 0:
                return True
        return False


def _edges_from(model: Model) -> Iterable[_Edge]:
    """The foreign keys to `model` that Django's Collector follows."""
    relation: Any
    for relation in get_candidate_relations_to_delete(model._meta):
        fk = relation.field
        child = relation.related_model._meta.concrete_model
        assert isinstance(fk, models.ForeignKey) and child is not None
        yield _Edge(model, child, fk)


def _check_supported(model: Model) -> None:
    """Refuse what Django's Collector does and this does not."""
    name = model._meta.label
    if signals.pre_delete.has_listeners(model) or signals.post_delete.has_listeners(
        model
    ):
        raise ImproperlyConfigured(f"{name} has delete signal receivers.")
    if model._meta.parents:
        raise ImproperlyConfigured(f"{name} inherits from a concrete model.")
    if any(hasattr(f, "bulk_related_objects") for f in model._meta.private_fields):
        raise ImproperlyConfigured(f"{name} has a generic relation.")


def _graph(roots: Iterable[Model]) -> tuple[list[Model], list[_Edge]]:
    """The models a deletion of `roots` reaches through cascades, parents before
    children, and every foreign key to them that is not DO_NOTHING."""
    reached: list[Model] = []
    edges: list[_Edge] = []
    frontier = list(dict.fromkeys(roots))
    while frontier:
        model = frontier.pop()
        if model in reached:
            continue
        _check_supported(model)
        reached.append(model)
        for edge in _edges_from(model):
            if edge.on_delete is DO_NOTHING:
                continue
            if edge.on_delete not in (CASCADE, PROTECT, SET_NULL):
                raise ImproperlyConfigured(
                    f"{edge.child._meta.label}.{edge.field.name}: only CASCADE, "
                    "PROTECT, SET_NULL and DO_NOTHING are followed."
                )
            if edge.on_delete is CASCADE and edge.child is model:
                raise ImproperlyConfigured(f"{model._meta.label} cascades to itself.")
            edges.append(edge)
            if edge.on_delete is CASCADE:
                frontier.append(edge.child)
    # Parents before children: a child's rows are found through its parents' (a
    # cascade), and where both ends of a protected key go (a dataset and its runs),
    # the referencing rows are deleted first, as the Collector orders them.
    ordering = [
        e
        for e in edges
        if e.on_delete is not SET_NULL
        and e.child in reached
        and e.parent is not e.child
    ]
    ordered: list[Model] = []
    waiting = list(reached)
    while waiting:
        ready = [
            m
            for m in waiting
            if all(e.parent in ordered for e in ordering if e.child is m)
        ]
        if not ready:
            names = ", ".join(m._meta.label for m in waiting)
            raise ImproperlyConfigured(f"The cascades among {names} form a cycle.")
        ordered += ready
        waiting = [m for m in waiting if m not in ready]
    return ordered, edges


def cascade_collect(*, roots: Iterable[QuerySet[Any]], using: str) -> Cascade:
    """Everything deleting the rows of `roots` deletes or unlinks, by Django's
    on_delete rules; raises ProtectedError (as Django's Collector does) when a row
    that stays protects one that would go.

    The roots are querysets evaluated when used, like the rest: they must not
    select their rows by a key the deletion sets to null (an object's pk, a
    dataset's runs by their protected dataset key are fine).

    Steps: walk the foreign keys from the roots' models (`_graph`); give each
    model, parents first, its paths: its roots, and per cascade to it, the rows
    referencing each path of the parent; check the protected references; collect
    the set-null ones."""
    by_model: dict[Model, list[QuerySet[Any]]] = {}
    for qs in roots:
        by_model.setdefault(qs.model._meta.concrete_model, []).append(qs.order_by())
    ordered, edges = _graph(by_model)
    cascade = Cascade(using=using)
    for model in ordered:
        cascade.paths[model] = by_model.get(model, []) + [
            e.referencing(path)
            for e in edges
            if e.child is model and e.on_delete is CASCADE
            for path in cascade.paths[e.parent]
        ]
    for edge in edges:
        if edge.on_delete is CASCADE:
            continue
        paths = [edge.referencing(p) for p in cascade.paths[edge.parent]]
        if edge.child in cascade.paths:
            paths = _excluding(paths, cascade.paths[edge.child])
        if edge.on_delete is SET_NULL:
            cascade.unlinks.append((edge.field, paths))
        elif protected := {row for p in paths for row in p[:10]}:
            raise ProtectedError(
                f"Cannot delete some instances of model "
                f"{edge.parent.__name__!r} because they are referenced through "
                f"protected foreign key: '{edge.child.__name__}.{edge.field.name}'",
                protected,
            )
    return cascade


def cascade_delete(
    cascade: Cascade,
) -> tuple[dict[Model, int], list[tuple[models.ForeignKey[Any, Any], int]]]:
    """Set the unlinked keys to null, then delete each model's rows, children
    first, a statement per path (a row that an earlier path's statement deleted or
    unlinked is not found again, so the sums count each row once). Returns the
    rows deleted per model (in the order of `paths`) and the rows unlinked per
    key. Call it in a transaction."""
    unlinked = [
        (fk, sum(p.update(**{fk.name: None}) for p in paths))
        for fk, paths in cascade.unlinks
    ]
    deleted: dict[Model, int] = {}
    for model in reversed(cascade.paths):
        # _raw_delete: one DELETE … WHERE of the queryset, without the Collector
        # (QuerySet.delete() would load the rows of every model that has children).
        deleted[model] = sum(p._raw_delete(cascade.using) for p in cascade.paths[model])
    return {model: deleted[model] for model in cascade.paths}, unlinked
