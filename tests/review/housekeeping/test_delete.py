"""Deleting runs, datasets, scorers, judges and queues: exactly the rows the
confirmation names go, in every table; nothing is orphaned; nothing of another
project is touched; and what a running run or an open queue needs is refused."""

from __future__ import annotations

import pytest
from django.db import connection

from evalsite.accounts.models import AuditEvent
from evalsite.core.exceptions import ConflictError
from evalsite.evals.models import Run, RunScorer
from evalsite.review.housekeeping.selectors import deletion_plan
from evalsite.review.housekeeping.services import object_delete
from evalsite.review.models import ReviewQueue
from evalsite.webhooks.models import Webhook
from tests.factories import ProjectFactory
from tests.review.housekeeping.world import (
    ITEMS,
    World,
    build_world,
    changes,
    orphans,
    project_rows,
    table_counts,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="deletion is checked on Postgres"
    ),
]


@pytest.fixture
def worlds(project, owner) -> tuple[World, World]:
    other = ProjectFactory(name="Other team")
    return build_world(project, owner), build_world(other, owner)


def _close_queues(world: World) -> None:
    ReviewQueue.objects.filter(project=world.project).update(archived=True)


def _delete_and_check(
    world: World, other: World, kind: str, obj, owner, expected: dict[str, int]
) -> None:
    """Delete; every table changed by exactly `expected` (plus the audit event),
    the plan counted the same, nothing orphaned, the other project untouched."""
    other_rows = project_rows(other.project)
    plan = deletion_plan(kind=kind, obj=obj)
    assert plan.blockers == []
    before = table_counts()
    done = object_delete(kind=kind, obj=obj, user=owner)
    after = table_counts()
    assert changes(before, after) == {**expected, "accounts.AuditEvent": 1}
    removed = {label: -n for label, n in expected.items() if n < 0}
    by_label = {
        "evals.Run": "runs",
        "evals.RunScorer": "run scorers",
        "evals.Result": "results",
        "evals.JudgeCall": "judge calls",
        "evals.Override": "overrides",
        "evals.Comment": "comments",
        "evals.ReviewVersion": "review counters",
        "review.ReviewQueue": "review queues",
        "review.QueueEntry": "queue entries",
        "review.Review": "reviews and answers",
        "review.Guideline": "queue guidelines",
        "review.PairwiseItem": "pairwise pairs",
        "review.Preference": "pairwise answers",
        "datasets.Dataset": "dataset versions",
        "datasets.Item": "items",
        "datasets.DatasetMatch": "dataset matchings",
        "datasets.DatasetMatchPair": "matched item pairs",
        "evals.ScorerConfig": "scorer versions",
        "evals.JudgeConnection": "judge connections",
    }
    assert plan.counts == {by_label[label]: n for label, n in removed.items()}
    assert done.counts == plan.counts
    assert orphans() == []
    assert project_rows(other.project) == other_rows
    noun = {"runs": "run", "datasets": "dataset", "scorers": "scorer"}.get(
        kind, kind[:-1]
    )
    event = AuditEvent.objects.get(action=f"{noun}.delete")
    assert event.project_id == world.project.pk
    assert event.actor == owner
    assert event.object_id == obj.pk and event.object_label == plan.name
    assert event.before["counts"] == plan.counts


def test_deleting_a_run_takes_its_results_reviews_and_closed_queues(worlds, owner):
    world, other = worlds
    _close_queues(world)
    _delete_and_check(
        world,
        other,
        "runs",
        world.run,
        owner,
        {
            "evals.Run": -1,
            "evals.RunScorer": -1,
            "evals.ReviewVersion": -1,
            "evals.Result": -ITEMS,
            "evals.JudgeCall": -ITEMS,
            "evals.Override": -1,
            "evals.Comment": -1,
            "review.ReviewQueue": -2,  # its queue and the pairwise queue it is A of
            "review.QueueEntry": -ITEMS,
            "review.Review": -1,
            "review.Guideline": -1,  # the queue's; the project's stay
            "review.PairwiseItem": -ITEMS,
            "review.Preference": -1,
        },
    )
    # The webhook stays, without its baseline; its delivery log stays too.
    webhook = Webhook.objects.get(pk=world.webhook.pk)
    assert webhook.baseline_run_id is None
    assert webhook.deliveries.count() == 1
    # Events about the run outlive it (ids, not keys).
    assert AuditEvent.objects.filter(run_id=world.run.pk).count() == 2
    assert Run.objects.filter(pk=world.run_b.pk).exists()


def test_the_run_plan_names_what_stays_but_loses_its_link(worlds, owner):
    world, _ = worlds
    _close_queues(world)
    plan = deletion_plan(kind="runs", obj=world.run)
    assert [(line.label, line.count) for line in plan.unlinks] == [
        ("webhooks keep their rows but lose their “baseline run” link", 1)
    ]
    assert len(plan.closed_queues) == 2


def test_deleting_a_dataset_version_takes_its_runs_and_matchings(worlds, owner):
    world, other = worlds
    _close_queues(world)
    _delete_and_check(
        world,
        other,
        "datasets",
        world.dataset_v1,
        owner,
        {
            "datasets.Dataset": -1,
            "datasets.Item": -ITEMS,
            "datasets.DatasetMatch": -1,
            "datasets.DatasetMatchPair": -ITEMS,
            "evals.Run": -1,
            "evals.RunScorer": -1,
            "evals.ReviewVersion": -1,
            "evals.Result": -ITEMS,
            "evals.JudgeCall": -ITEMS,
            "evals.Override": -1,
            "evals.Comment": -1,
            "review.ReviewQueue": -2,
            "review.QueueEntry": -ITEMS,
            "review.Review": -1,
            "review.Guideline": -1,
            "review.PairwiseItem": -ITEMS,
            "review.Preference": -1,
        },
    )
    assert world.dataset_v2.items.count() == ITEMS


def test_deleting_a_judge_takes_its_scorers_and_keeps_the_runs_snapshots(worlds, owner):
    world, other = worlds
    _delete_and_check(
        world,
        other,
        "judges",
        world.judge,
        owner,
        {"evals.JudgeConnection": -1, "evals.ScorerConfig": -2},
    )
    snapshots = RunScorer.objects.filter(run__project=world.project)
    assert snapshots.count() == 2
    assert all(rs.judge_id is None and rs.scorer_id is None for rs in snapshots)
    assert all(rs.judge_snapshot == {} or rs.judge_snapshot for rs in snapshots)


def test_deleting_a_scorer_takes_every_version(worlds, owner):
    world, other = worlds
    _delete_and_check(
        world, other, "scorers", world.scorer_v2, owner, {"evals.ScorerConfig": -2}
    )
    assert RunScorer.objects.filter(run__project=world.project).count() == 2


def test_deleting_a_queue_takes_its_entries_answers_and_guidelines(worlds, owner):
    world, other = worlds
    _delete_and_check(
        world,
        other,
        "queues",
        world.queue,
        owner,
        {
            "review.ReviewQueue": -1,
            "review.QueueEntry": -ITEMS,
            "review.Review": -1,
            "review.Guideline": -1,
        },
    )
    # The results and the overrides the queue's answers made stay.
    assert world.run.results.count() == ITEMS
    assert world.run.results.filter(overrides__isnull=False).exists()


# Refusals: nothing changes.


def _refused(kind: str, obj, owner, *words: str) -> None:
    before = table_counts()
    plan = deletion_plan(kind=kind, obj=obj)
    assert plan.blockers
    with pytest.raises(ConflictError) as caught:
        object_delete(kind=kind, obj=obj, user=owner)
    for word in words:
        assert word in caught.value.message
    assert table_counts() == before


@pytest.mark.parametrize("status", [Run.Status.RUNNING, Run.Status.QUEUED])
def test_a_queued_or_running_run_is_not_deleted(worlds, owner, status):
    world, _ = worlds
    _close_queues(world)
    Run.objects.filter(pk=world.run.pk).update(status=status)
    world.run.refresh_from_db()
    _refused("runs", world.run, owner, f"#{world.run.pk}", "cancel it")
    # Nor its dataset, nor the judge and scorer it is using.
    _refused("datasets", world.dataset_v1, owner, f"#{world.run.pk}")
    _refused("judges", world.judge, owner, f"#{world.run.pk}")
    _refused("scorers", world.scorer_v2, owner, f"#{world.run.pk}")
    _refused("scorers", world.scorer_v1, owner, f"#{world.run.pk}")


def test_a_run_an_open_queue_needs_is_not_deleted(worlds, owner):
    world, _ = worlds
    _refused("runs", world.run, owner, world.queue.name, "archive the queue")
    # Run B of an open pairwise queue, and the dataset of a run an open queue needs.
    _refused("runs", world.run_b, owner, "A vs B")
    _refused("datasets", world.dataset_v1, owner, world.queue.name)


def test_the_offline_judge_is_not_deleted(project, owner):
    from evalsite.evals.judges.services import judge_create_offline
    from evalsite.evals.models import JudgeConnection

    judge = JudgeConnection.objects.filter(
        project=project, is_offline=True
    ).first() or judge_create_offline(project)
    _refused("judges", judge, owner, "offline judge")
