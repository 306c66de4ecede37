"""Housekeeping deletes by querysets, a table at a time (evalsite.lib.cascade), not
with Django's deletion Collector, which loads every row it cascades through. Here,
for every kind and a variety of objects, the new deletion must leave exactly the
database Django's Collector leaves (the rows that go, the keys set to null), and the
confirmation page must count exactly those rows; and the fixture must have a row
behind every foreign key a deletion follows, so a new model or key that points at
what goes is compared too, not skipped."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import models, router, transaction
from django.db.models import QuerySet
from django.db.models.deletion import (
    DO_NOTHING,
    PROTECT,
    Collector,
    ProtectedError,
    get_candidate_relations_to_delete,
)
from django.db.models.signals import post_init

from evalsite.accounts.models import AuditEvent
from evalsite.datasets.models import Dataset, DatasetMatchPair, Item
from evalsite.evals.models import (
    Comment,
    JudgeCall,
    JudgeConnection,
    Override,
    Result,
    Run,
    ScorerConfig,
)
from evalsite.lib.cascade import cascade_collect
from evalsite.review.housekeeping.selectors import (
    KIND_INFO,
    KINDS,
    deletion_plan,
    row_label,
    scorer_lineage,
)
from evalsite.review.housekeeping.services import object_delete
from evalsite.review.models import (
    PairwiseItem,
    Preference,
    QueueEntry,
    Review,
    ReviewQueue,
)
from tests.factories import ProjectFactory
from tests.review.housekeeping.world import (
    MoreRuns,
    World,
    add_the_rest,
    all_models,
    build_world,
)

pytestmark = pytest.mark.django_db


class _ReferenceCollector(Collector):
    """Django's Collector as housekeeping used it: a protected reference from a row
    that goes too (a dataset's runs, a judge's scorers: collected first) does not
    stop the deletion."""

    def related_objects(self, related_model, related_fields, objs):
        qs = super().related_objects(related_model, related_fields, objs)
        if any(f.remote_field.on_delete is PROTECT for f in related_fields):
            taken = [o.pk for o in self.data.get(related_model, ())]
            if taken:
                qs = qs.exclude(pk__in=taken)
        return qs


def _django_delete(kind: str, obj: Any) -> None:
    # A copy: the Collector sets the pk of what it deleted to None.
    obj = type(obj)._base_manager.get(pk=obj.pk)
    collector = _ReferenceCollector(using=router.db_for_write(type(obj)), origin=obj)
    targets = [obj]
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
    collector.delete()


def _snapshot() -> dict[str, dict[Any, tuple]]:
    """Every row of every table, by pk, with its foreign keys."""
    rows = {}
    for model in all_models():
        keys = [
            f.attname
            for f in model._meta.concrete_fields
            if isinstance(f, models.ForeignKey)
        ]
        rows[model._meta.label] = {
            pk: tuple(values)
            for pk, *values in model._base_manager.values_list("pk", *keys)
        }
    return rows


def _what_django_does(kind: str, obj: Any) -> dict[str, dict[Any, tuple]]:
    """The database after Django's Collector deleted `obj` (then rolled back)."""
    with transaction.atomic():
        _django_delete(kind, obj)
        after = _snapshot()
        transaction.set_rollback(True)
    return after


def _by_model(model_label: str) -> type[models.Model]:
    return next(m for m in all_models() if m._meta.label == model_label)


@pytest.fixture
def world(project, owner) -> tuple[World, MoreRuns]:
    """The full world in the project, and another project's beside it; every queue
    closed, so that nothing blocks a deletion."""
    world = build_world(project, owner)
    more = add_the_rest(world, owner)
    other = build_world(ProjectFactory(name="Other team"), owner)
    add_the_rest(other, owner)
    ReviewQueue.objects.update(archived=True)
    return world, more


OBJECTS = [
    ("runs", "run"),
    ("runs", "run_b"),
    ("runs", "rejudge"),
    ("runs", "lab"),
    ("runs", "audit"),
    ("datasets", "dataset_v1"),
    ("datasets", "dataset_v2"),
    ("judges", "judge"),
    ("scorers", "scorer_v1"),
    ("scorers", "scorer_v2"),
    ("queues", "queue"),
    ("queues", "pairwise"),
]


@pytest.mark.parametrize(("kind", "name"), OBJECTS)
def test_deletion_matches_djangos_collector(world, owner, kind, name):
    world, more = world
    obj = getattr(world, name, None) or getattr(more, name)
    before = _snapshot()
    expected = _what_django_does(kind, obj)
    assert expected != before

    plan = deletion_plan(kind=kind, obj=obj)
    done = object_delete(kind=kind, obj=obj, user=owner)
    after = _snapshot()

    # The same database, but for the deletion's audit event.
    event = AuditEvent.objects.get(action__endswith=".delete")
    del after["accounts.AuditEvent"][event.pk]
    assert after == expected
    # The page counted what went, and what stayed but lost a link.
    gone: dict[str, int] = {}
    for label, rows in before.items():
        if n := len(rows.keys() - expected[label].keys()):
            line = row_label(_by_model(label))
            gone[line] = gone.get(line, 0) + n
    assert plan.counts == gone
    unlinked: dict[str, int] = {}
    for label, rows in before.items():
        model = _by_model(label)
        keys = [
            f for f in model._meta.concrete_fields if isinstance(f, models.ForeignKey)
        ]
        for pk, values in rows.items():
            if pk not in expected[label]:
                continue
            for fk, old, new in zip(keys, values, expected[label][pk], strict=True):
                if old is not None and new is None:
                    line = f"{row_label(model)} keep their rows but lose their “{fk.verbose_name}” link"
                    unlinked[line] = unlinked.get(line, 0) + 1
    assert {line.label: line.count for line in plan.unlinks} == unlinked
    # The deletion's own counts (the audit event's) are the page's.
    assert (done.removals, done.unlinks) == (plan.removals, plan.unlinks)
    assert event.before["counts"] == plan.counts


def _reached_keys() -> list[tuple[type[models.Model], models.ForeignKey]]:
    """Every foreign key a deletion of any kind follows (not DO_NOTHING) to a model
    it reaches, walked the way Django's Collector walks them."""
    keys = []
    reached: list[type[models.Model]] = []
    frontier = [KIND_INFO[kind].model for kind in KINDS]
    while frontier:
        model = frontier.pop()
        if model in reached:
            continue
        reached.append(model)
        for relation in get_candidate_relations_to_delete(model._meta):
            if relation.field.remote_field.on_delete is DO_NOTHING:
                continue
            keys.append((relation.related_model, relation.field))
            frontier.append(relation.related_model)
    return keys


def test_the_fixture_has_a_row_behind_every_key_a_deletion_follows(world):
    world, _ = world
    missing = [
        f"{model._meta.label}.{fk.name}"
        for model, fk in _reached_keys()
        if not model._base_manager.filter(**{f"{fk.attname}__isnull": False}).exists()
    ]
    # Keys to what no deletion takes (a judge version) have no row to follow.
    assert missing == []


def test_a_protected_row_that_stays_stops_the_deletion(world):
    world, _ = world
    # A dataset without its runs, as Django's Collector refuses it too.
    roots: list[QuerySet[Any]] = [Dataset.objects.filter(pk=world.dataset_v1.pk)]
    with pytest.raises(ProtectedError) as caught:
        cascade_collect(roots=roots, using="default")
    assert {type(o) for o in caught.value.protected_objects} == {Run}
    with pytest.raises(ProtectedError):
        Collector(using="default").collect([world.dataset_v1])


# The tables that grow with a run or a dataset: a million rows, not a handful.
ROW_TABLES = {
    Result,
    JudgeCall,
    Override,
    Comment,
    QueueEntry,
    Review,
    PairwiseItem,
    Preference,
    Item,
    DatasetMatchPair,
}


@pytest.mark.parametrize(
    ("kind", "name"), [("runs", "run"), ("datasets", "dataset_v1")]
)
def test_the_page_and_the_deletion_load_none_of_the_rows_that_go(
    world, owner, kind, name
):
    """They count and delete in the database: no row of a big table becomes an
    object in the process (Django's Collector made one per result and item)."""
    world, _ = world
    obj = getattr(world, name)
    loaded: set[type[models.Model]] = set()

    def note(sender, **kwargs):
        loaded.add(sender)

    post_init.connect(note)
    try:
        assert deletion_plan(kind=kind, obj=obj).counts["results"] > 0
        object_delete(kind=kind, obj=obj, user=owner)
    finally:
        post_init.disconnect(note)
    assert loaded & ROW_TABLES == set()
