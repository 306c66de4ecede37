"""A worker keeps its database connection from one task to the next, the way Django
keeps one between requests, and still drops one that is obsolete or broken.

Celery's Django fixup closes the connection around every task unless
CELERY_DB_REUSE_MAX is set; evalsite sets it and applies Django's own rule instead
(evalsite.celery.close_old_db_connections).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection, transaction

from evalsite.celery import app, close_old_db_connections


def _task(*, eager: bool) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(is_eager=eager))


def _between_tasks(task: SimpleNamespace) -> None:
    """What a worker runs after one task and before the next: the fixup's handlers and
    evalsite's, in the order Celery's signals call them."""
    fixup = DjangoWorkerFixup(app)
    fixup.on_task_postrun(task)
    close_old_db_connections(sender=task)
    fixup.on_task_prerun(task)
    close_old_db_connections(sender=task)


@pytest.fixture
def persistent_connection() -> Iterator[None]:
    """The default connection opened with CONN_MAX_AGE = 60 (Postgres' setting in
    evalsite.settings; SQLite's default is 0, i.e. a connection per task)."""
    saved = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 60
    connection.close()
    connection.ensure_connection()
    try:
        yield
    finally:
        connection.settings_dict["CONN_MAX_AGE"] = saved
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_worker_reuses_its_connection_across_tasks(persistent_connection: None) -> None:
    opened = connection.connection
    for _ in range(3):
        _between_tasks(_task(eager=False))
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    assert connection.connection is opened


@pytest.mark.django_db(transaction=True)
def test_worker_drops_an_obsolete_connection(persistent_connection: None) -> None:
    connection.close_at = time.monotonic() - 1  # outlived CONN_MAX_AGE
    _between_tasks(_task(eager=False))
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_worker_drops_a_connection_left_mid_transaction(
    persistent_connection: None,
) -> None:
    connection.set_autocommit(False)  # what a task that died mid-transaction leaves
    _between_tasks(_task(eager=False))
    assert connection.connection is None
    assert connection.get_autocommit()


@pytest.mark.django_db(transaction=True)
def test_eager_task_leaves_the_callers_transaction_alone(
    persistent_connection: None,
) -> None:
    with transaction.atomic():
        opened = connection.connection
        close_old_db_connections(sender=_task(eager=True))
        assert connection.connection is opened
        assert connection.in_atomic_block
