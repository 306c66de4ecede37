"""One factory-boy factory per model the tests build.

Defaults are the plainest valid row; a test names what it asserts on. Scenes made of many
rows (a scored run, one of every object in a project) are builders beside their tests:
tests/review/builders.py and tests/exports/builders.py, made from these factories.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from evalsite.accounts.models import (
    MEMBERSHIP_OBJECT,
    AuditEvent,
    Invitation,
    Membership,
    Project,
    Role,
    hash_token,
)
from evalsite.datasets.models import Dataset, Item
from evalsite.evals.crypto import secret_encrypt
from evalsite.evals.models import (
    JudgeCall,
    JudgeConnection,
    Result,
    Run,
    RunScorer,
    ScorerConfig,
)
from evalsite.review.models import (
    Comment,
    Override,
    QueueEntry,
    ReviewQueue,
    SavedFilter,
)
from scoring import KINDS, validate_options


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Project {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.VIEWER


class DatasetFactory(factory.django.DjangoModelFactory):
    """A dataset; `rows=[{"input": ..., "output": ..., ...}, ...]` adds one item per row
    (fields a row leaves out keep the model's defaults), in order, and sets item_count.
    Another dataset of the same name in the project is its next version."""

    class Meta:
        model = Dataset
        skip_postgeneration_save = True

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"dataset{n}")
    version = factory.LazyAttribute(
        lambda o: Dataset.objects.filter(project=o.project, name=o.name).count() + 1
    )
    file_format = Dataset.Format.JSONL

    @factory.post_generation
    def rows(
        dataset: Dataset,
        create: bool,
        rows: list[dict[str, Any]] | None,
        **kwargs: Any,
    ) -> None:
        if not create or rows is None:
            return
        Item.objects.bulk_create(
            Item(dataset=dataset, index=index, **row) for index, row in enumerate(rows)
        )
        dataset.item_count = len(rows)
        dataset.save(update_fields=["item_count"])


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    dataset = factory.SubFactory(DatasetFactory)
    index = factory.Sequence(lambda n: n)
    input = factory.Sequence(lambda n: f"q{n}")
    output = factory.Sequence(lambda n: f"a{n}")


class JudgeConnectionFactory(factory.django.DjangoModelFactory):
    """A judge on a closed port (nothing is called); `api_key="sk-..."` stores it
    encrypted, as the judge form does."""

    class Meta:
        model = JudgeConnection

    class Params:
        api_key = ""

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"judge{n}")
    base_url = "http://127.0.0.1:9/v1"
    model = "gpt-4o-mini"
    api_key_encrypted = factory.LazyAttribute(
        lambda o: secret_encrypt(o.api_key) if o.api_key else ""
    )
    api_key_env = ""
    api_key_url = factory.LazyAttribute(
        lambda o: o.base_url if o.api_key or o.api_key_env else ""
    )


class ScorerConfigFactory(factory.django.DjangoModelFactory):
    """A scorer of `kind` named like the kind, with the kind's default options; pass
    `judge` for the kinds that need one."""

    class Meta:
        model = ScorerConfig

    project = factory.SubFactory(ProjectFactory)
    kind = "faithfulness"
    name = factory.LazyAttribute(lambda o: KINDS[o.kind].label)
    options = factory.LazyAttribute(lambda o: validate_options(o.kind, None))


class RunFactory(factory.django.DjangoModelFactory):
    """A run of a dataset of its project; finished_at is set when the status is final."""

    class Meta:
        model = Run

    project = factory.SubFactory(ProjectFactory)
    dataset = factory.SubFactory(
        DatasetFactory, project=factory.SelfAttribute("..project")
    )
    status = Run.Status.DONE
    finished_at = factory.LazyAttribute(
        lambda o: timezone.now() if o.status in Run.FINISHED else None
    )


class RunScorerFactory(factory.django.DjangoModelFactory):
    """The run's snapshot of `scorer` (a new one of the run's project by default)."""

    class Meta:
        model = RunScorer

    run = factory.SubFactory(RunFactory)
    scorer = factory.SubFactory(
        ScorerConfigFactory, project=factory.SelfAttribute("..run.project")
    )
    name = factory.SelfAttribute("scorer.name")
    kind = factory.SelfAttribute("scorer.kind")
    options = factory.SelfAttribute("scorer.options")
    judge = factory.SelfAttribute("scorer.judge")


class ResultFactory(factory.django.DjangoModelFactory):
    """An ok result of the run for one item of its dataset: pass `run`, `run_scorer` and
    `item` together, or leave out the ones to make new."""

    class Meta:
        model = Result

    run = factory.SubFactory(RunFactory)
    run_scorer = factory.SubFactory(
        RunScorerFactory, run=factory.SelfAttribute("..run")
    )
    item = factory.SubFactory(
        ItemFactory, dataset=factory.SelfAttribute("..run.dataset")
    )
    status = Result.Status.OK


class JudgeCallFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = JudgeCall

    result = factory.SubFactory(ResultFactory)
    step = "claims"


class OverrideFactory(factory.django.DjangoModelFactory):
    """An override row as stored (by nobody, unless `user` is given), without the
    service's recount of the result: tests whose result must follow it call review's
    override_create instead."""

    class Meta:
        model = Override

    result = factory.SubFactory(ResultFactory)
    kind = Override.Kind.PASS
    new_value = True


class CommentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Comment

    result = factory.SubFactory(ResultFactory)
    user = factory.SubFactory(UserFactory)
    body = factory.Sequence(lambda n: f"comment {n}")


class AuditEventFactory(factory.django.DjangoModelFactory):
    """An event naming `run` (and `result`, if given) by id, as the services do."""

    class Meta:
        model = AuditEvent

    class Params:
        run = factory.SubFactory(RunFactory)
        result = None

    project = factory.SelfAttribute("run.project")
    run_id = factory.LazyAttribute(lambda o: o.run.pk if o.run else None)
    result_id = factory.LazyAttribute(lambda o: o.result.pk if o.result else None)
    action = "override"
    object_type = "override"


class ReviewQueueFactory(factory.django.DjangoModelFactory):
    """A queue of `run`; its entries are QueueEntryFactory rows (size is not counted)."""

    class Meta:
        model = ReviewQueue

    run = factory.SubFactory(RunFactory)
    project = factory.SelfAttribute("run.project")
    name = factory.Sequence(lambda n: f"queue {n}")


class QueueEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QueueEntry

    queue = factory.SubFactory(ReviewQueueFactory)
    result = factory.SubFactory(ResultFactory, run=factory.SelfAttribute("..queue.run"))
    position = factory.Sequence(lambda n: n + 1)


class InvitationFactory(factory.django.DjangoModelFactory):
    """A pending invitation whose link's token is `token` (only its hash is stored, so
    a test that opens the link passes the token it chose)."""

    class Meta:
        model = Invitation

    class Params:
        token = factory.Sequence(lambda n: f"invitation-token-{n}")

    project = factory.SubFactory(ProjectFactory)
    role = Role.REVIEWER
    token_hash = factory.LazyAttribute(lambda o: hash_token(o.token))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))


class MembershipEventFactory(factory.django.DjangoModelFactory):
    """A membership event of the audit log (the access log reads these)."""

    class Meta:
        model = AuditEvent

    project = factory.SubFactory(ProjectFactory)
    object_type = MEMBERSHIP_OBJECT
    action = "member_added"
    after = factory.LazyFunction(lambda: {"role": Role.VIEWER})


class SavedFilterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SavedFilter

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"filter {n}")
    query = "final=fail"
