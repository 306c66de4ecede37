"""evalsite.lib.db.compiled_once: the same objects and rows as the ORM's own
iteration, call after call with other values, and the ORM's way whenever the SQL
cannot be kept."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import Count, F, QuerySet
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from evalsite.accounts.models import Membership, Project
from evalsite.lib import db
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    db.compiled_cache().clear()
    yield
    db.compiled_cache().clear()


def _memberships(v: Mapping[str, int]) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(project_id=v["project"], user_id__gte=v["user"])
        .select_related("project", "user")
        .annotate(project_members=Count("project__memberships"), twice=F("id") * 2)
        .order_by("id")
    )


def _fields(m: Membership) -> tuple:
    return (
        m.pk,
        m.role,
        m.created_at,
        m.project.pk,
        m.project.name,
        m.user.username,
        m.project_members,
        m.twice,
    )


def test_instances_equal_the_orms_call_after_call():
    projects = [ProjectFactory(), ProjectFactory()]
    users = [UserFactory() for _ in range(3)]
    for project in projects:
        for user in users[: 2 if project is projects[0] else 3]:
            MembershipFactory(project=project, user=user)
    for project in (*projects, projects[0]):
        for user in users:
            values = {"project": project.pk, "user": user.pk}
            got = db.compiled_once("memberships", _memberships, values)
            assert [_fields(m) for m in got] == [
                _fields(m) for m in _memberships(values)
            ]
            # select_related objects are loaded: reading them asks nothing.
            assert all(Membership.project.is_cached(m) for m in got)
    assert len(db.compiled_cache()) == 1


def test_values_list_rows_go_through_the_converters():
    project = ProjectFactory()
    MembershipFactory(project=project)

    def build(v: Mapping[str, int]) -> QuerySet[Membership]:
        return Membership.objects.filter(project_id=v["project"]).values_list(
            "id", "created_at", "role"
        )

    values = {"project": project.pk}
    assert db.compiled_once("rows", build, values) == list(build(values))
    assert db.compiled_once("rows", build, values) == list(build(values))
    assert db.compiled_once("rows", build, {"project": project.pk + 1000}) == []


def test_a_value_the_query_does_not_carry_is_run_the_orms_way():
    project = ProjectFactory()

    def build(v: Mapping[str, int]) -> QuerySet[Project]:
        # "unused" never reaches the SQL: nothing can be kept.
        return Project.objects.filter(pk=v["project"])

    got = db.compiled_once("unused", build, {"project": project.pk, "unused": 5})
    assert got == [project]
    assert not db.compiled_cache()


def test_an_empty_in_list_is_run_the_orms_way():
    def build(v: Mapping[str, int]) -> QuerySet[Project]:
        return Project.objects.filter(pk__in=[])

    assert db.compiled_once("empty", build, {}) == []


@pytest.mark.django_db(transaction=True)
def test_a_locking_read_outside_a_transaction_is_refused_as_the_orm_does():
    project = ProjectFactory()

    def build(v: Mapping[str, int]) -> QuerySet[Project]:
        return Project.objects.select_for_update().filter(pk=v["project"])

    with transaction.atomic():
        assert db.compiled_once("lock", build, {"project": project.pk}) == [project]
    if connection.features.has_select_for_update:
        with pytest.raises(TransactionManagementError):
            db.compiled_once("lock", build, {"project": project.pk})


@pytest.mark.django_db(transaction=True)
def test_a_thread_given_a_new_connection_runs_on_it_not_on_the_one_that_compiled():
    """Tests (and thread pools) replace a thread's connection: the SQL kept with
    the old one must neither run on it nor check its transaction state."""
    project = ProjectFactory()

    def build(v: Mapping[str, int]) -> QuerySet[Project]:
        return Project.objects.select_for_update().filter(pk=v["project"])

    with transaction.atomic():
        assert db.compiled_once("lock", build, {"project": project.pk}) == [project]
    old = connections[DEFAULT_DB_ALIAS]
    new = connections.create_connection(DEFAULT_DB_ALIAS)
    connections[DEFAULT_DB_ALIAS] = new
    try:
        assert not db.compiled_cache()
        with transaction.atomic(), CaptureQueriesContext(new) as on_new:
            # The old connection is in autocommit: checked there, this raised.
            assert db.compiled_once("lock", build, {"project": project.pk}) == [project]
        assert any("FOR UPDATE" in q["sql"] for q in on_new.captured_queries) == (
            connection.features.has_select_for_update
        )
    finally:
        connections[DEFAULT_DB_ALIAS] = old
        new.close()
