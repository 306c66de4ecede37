"""A project with one of everything archive and delete touch, and the helpers the
deletion tests count tables with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import connection, models

from evalsite.accounts.models import Project
from evalsite.datasets.models import Dataset, DatasetMatch, DatasetMatchPair
from evalsite.evals.models import (
    BiasAudit,
    JudgeConnection,
    JudgeVersion,
    Result,
    ReviewVersion,
    Run,
    ScorerConfig,
)
from evalsite.review.models import (
    Guideline,
    LabCandidate,
    LabReplay,
    PairwiseItem,
    Preference,
    QueueFlag,
    Review,
    ReviewQueue,
)
from evalsite.webhooks.models import Delivery, Webhook
from tests.factories import (
    AuditEventFactory,
    CommentFactory,
    DatasetFactory,
    JudgeCallFactory,
    JudgeConnectionFactory,
    OverrideFactory,
    QueueEntryFactory,
    ReviewQueueFactory,
    RunFactory,
    RunScorerFactory,
    ScorerConfigFactory,
)

ITEMS = 3


@dataclass
class World:
    project: Project
    judge: JudgeConnection
    scorer_v1: ScorerConfig
    scorer_v2: ScorerConfig
    dataset_v1: Dataset
    dataset_v2: Dataset
    run: Run  # on dataset_v1, with a review queue
    run_b: Run  # on dataset_v2, run B of a pairwise queue with `run`
    queue: ReviewQueue
    pairwise: ReviewQueue
    webhook: Webhook
    rows: dict[str, set[Any]] = field(default_factory=dict)


def build_world(project: Project, user: Any) -> World:
    """Two dataset versions (matched), a judge, a scorer in two versions, two
    finished runs with results, judge calls, overrides, comments, a review queue
    with entries, answers and guidelines, a pairwise queue of the two runs with
    pairs and a preference, a webhook with the run as its baseline and a
    delivery, and an audit event."""
    judge = JudgeConnectionFactory(project=project, name=f"judge of {project.pk}")
    v1 = ScorerConfigFactory(project=project, judge=judge, archived=True)
    v2 = ScorerConfigFactory(
        project=project, judge=judge, name=v1.name, version=2, parent=v1
    )
    rows = [{"input": f"q{i}", "output": f"a{i}"} for i in range(ITEMS)]
    d1 = DatasetFactory(project=project, name="support", rows=rows)
    d2 = DatasetFactory(project=project, name="support", rows=rows)
    match = DatasetMatch.objects.create(
        dataset_a=d1,
        dataset_b=d2,
        rule="input",
        items_a=ITEMS,
        items_b=ITEMS,
        matched=ITEMS,
        only_in_a=0,
        only_in_b=0,
        no_key_a=0,
        no_key_b=0,
    )
    items_1 = list(d1.items.order_by("index"))
    items_2 = list(d2.items.order_by("index"))
    DatasetMatchPair.objects.bulk_create(
        DatasetMatchPair(match=match, item_a=a.pk, item_b=b.pk)
        for a, b in zip(items_1, items_2, strict=True)
    )
    runs = []
    for dataset, items in ((d1, items_1), (d2, items_2)):
        run = RunFactory(project=project, dataset=dataset, total=ITEMS)
        run_scorer = RunScorerFactory(run=run, scorer=v2)
        ReviewVersion.objects.create(run_scorer=run_scorer, version=1)
        for item in items:
            result = Result.objects.create(
                run=run, item=item, run_scorer=run_scorer, status=Result.Status.OK
            )
            JudgeCallFactory(result=result)
        runs.append(run)
    run, run_b = runs
    first = run.results.order_by("pk").first()
    assert first is not None
    OverrideFactory(result=first, user=user)
    CommentFactory(result=first, user=user)
    queue = ReviewQueueFactory(run=run, name=f"failing cases of {project.pk}")
    for position, result in enumerate(run.results.order_by("pk"), start=1):
        QueueEntryFactory(queue=queue, result=result, position=position)
    guideline = Guideline.objects.create(
        project=project, queue=queue, version=1, body="Be strict."
    )
    Guideline.objects.create(project=project, version=1, body="Project rules.")
    Review.objects.create(
        queue=queue, result=first, reviewer=user, passed=True, guideline=guideline
    )
    pairwise = ReviewQueueFactory(
        run=run, run_b=run_b, kind=ReviewQueue.Kind.PAIRWISE, name="A vs B"
    )
    pairs = [
        PairwiseItem.objects.create(
            queue=pairwise, position=i + 1, item_a=a, item_b=b, a_left=True
        )
        for i, (a, b) in enumerate(zip(items_1, items_2, strict=True))
    ]
    Preference.objects.create(
        queue=pairwise,
        pair=pairs[0],
        reviewer=user,
        choice="a",
        side="left",
        a_left=True,
    )
    webhook = Webhook.objects.create(
        project=project,
        name="ci",
        url="https://ci.example.com/hook",
        secret_encrypted="x",
        baseline_run=run,
    )
    Delivery.objects.create(
        webhook=webhook,
        event="run.finished",
        event_key=f"run:{run.pk}",
        message_id=f"msg_{project.pk}",
        payload={"run": run.pk},
    )
    AuditEventFactory(run=run)
    return World(
        project=project,
        judge=judge,
        scorer_v1=v1,
        scorer_v2=v2,
        dataset_v1=d1,
        dataset_v2=d2,
        run=run,
        run_b=run_b,
        queue=queue,
        pairwise=pairwise,
        webhook=webhook,
    )


@dataclass
class MoreRuns:
    rejudge: Run  # a re-judge of world.run
    lab: Run  # a judge lab replay's candidate run
    audit: Run  # the hidden run of a bias audit of world.run


def add_the_rest(world: World, user: Any) -> MoreRuns:
    """What build_world leaves out and a deletion reaches too: a re-judge of the
    run, a judge version its scorer and results name, a bias audit of it (with its
    hidden audit run), a lab candidate of the scorer (promoted to its first
    version) with a replay over the two runs and a lab run, a guideline of the
    pairwise queue its answer names, and a flag on a queue entry and on a pair. The tables' rows then name every key a deletion follows."""
    project = world.project
    rejudge = RunFactory(
        project=project, dataset=world.dataset_v1, total=ITEMS, rejudge_of=world.run
    )
    version = JudgeVersion.objects.create(
        project=project, kind="faithfulness", digest="d", number=1, label="v1"
    )
    run_scorer = world.run.run_scorers.get()
    run_scorer.judge_version = version
    run_scorer.save(update_fields=["judge_version"])
    world.run.results.update(judge_version=version)
    audit = RunFactory(
        project=project, dataset=world.dataset_v1, purpose=Run.Purpose.AUDIT
    )
    BiasAudit.objects.create(
        project=project,
        run=world.run,
        run_scorer=run_scorer,
        audit_run=audit,
        sample_size=ITEMS,
        seed=1,
    )
    lab = RunFactory(project=project, dataset=world.dataset_v1, purpose=Run.Purpose.LAB)
    candidate = LabCandidate.objects.create(
        project=project,
        scorer=world.scorer_v2,
        name="stricter",
        promoted_to=world.scorer_v1,
    )
    replay = LabReplay.objects.create(
        project=project, candidate=candidate, scorer=world.scorer_v2
    )
    replay.current_runs.add(world.run, world.run_b)
    replay.candidate_runs.add(lab)
    world.pairwise.preferences.update(
        guideline=Guideline.objects.create(
            project=project, queue=world.pairwise, version=1, body="Prefer brief."
        )
    )
    QueueFlag.objects.create(
        project=project,
        queue=world.queue,
        entry=world.queue.entries.order_by("pk").last(),
        reason="No context.",
        flagged_by=user,
    )
    QueueFlag.objects.create(
        project=project,
        queue=world.pairwise,
        pair=world.pairwise.pairs.order_by("pk").last(),
        reason="Same answer twice.",
        flagged_by=user,
    )
    return MoreRuns(rejudge=rejudge, lab=lab, audit=audit)


def all_models() -> list[type[models.Model]]:
    return [
        m
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    ]


def table_counts() -> dict[str, int]:
    """Rows of every table."""
    return {m._meta.label: m._base_manager.count() for m in all_models()}


def changes(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The tables whose row count changed, and by how much."""
    return {
        label: after[label] - before[label]
        for label in before
        if after[label] != before[label]
    }


def orphans() -> list[str]:
    """Every foreign key value (constraint or not) that names no row, by raw SQL."""
    found = []
    with connection.cursor() as cursor:
        for model in all_models():
            for fk in model._meta.concrete_fields:
                if not isinstance(fk, models.ForeignKey):
                    continue
                target = fk.related_model._meta
                cursor.execute(
                    f'SELECT COUNT(*) FROM "{model._meta.db_table}" c '
                    f'LEFT JOIN "{target.db_table}" p '
                    f'ON c."{fk.column}" = p."{fk.target_field.column}" '
                    f'WHERE c."{fk.column}" IS NOT NULL AND p."{fk.target_field.column}" IS NULL'
                )
                (count,) = cursor.fetchone()
                if count:
                    found.append(f"{model._meta.label}.{fk.name}: {count}")
        # The matched pairs name their items by plain id.
        cursor.execute(
            'SELECT COUNT(*) FROM "review_datasetmatchpair" m '
            'LEFT JOIN "datasets_item" a ON a.id = m.item_a '
            'LEFT JOIN "datasets_item" b ON b.id = m.item_b '
            "WHERE a.id IS NULL OR b.id IS NULL"
        )
        (count,) = cursor.fetchone()
        if count:
            found.append(f"DatasetMatchPair items: {count}")
    return found


def project_rows(project: Project) -> dict[str, set[int]]:
    """The ids of the rows of every table that belong to `project` (directly or
    through a run, result, dataset, queue, judge or webhook of it)."""
    paths = {
        "project": "project",
        "run": "run__project",
        "result": "result__run__project",
        "dataset": "dataset__project",
        "queue": "queue__project",
        "webhook": "webhook__project",
        "run_scorer": "run_scorer__run__project",
        "dataset_a": "dataset_a__project",
        "pair": "pair__queue__project",
        "match": "match__dataset_a__project",
    }
    owned: dict[str, set[int]] = {}
    for model in all_models():
        names = {f.name for f in model._meta.concrete_fields}
        for name, path in paths.items():
            if name in names:
                qs = model._base_manager.filter(**{path: project})
                if model is DatasetMatchPair:
                    owned[model._meta.label] = set(qs.values_list("item_a", flat=True))
                else:
                    owned[model._meta.label] = set(qs.values_list("pk", flat=True))
                break
    return owned
