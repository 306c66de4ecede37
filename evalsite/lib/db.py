"""Helpers for the few statements written in SQL by hand."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Model


def column_name(model: type[Model], field_name: str) -> str:
    """The database column of one of `model`'s concrete fields."""
    field = model._meta.get_field(field_name)
    if not isinstance(field, Field) or field.column is None:
        raise LookupError(f"{model.__name__}.{field_name} has no column of its own.")
    return field.column


def insert_rows(
    model: type[Model], field_names: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """Insert plain rows (values in `field_names`' order, as the database takes
    them: JSON already dumped) into `model`'s table, skipping the ORM's objects.

    Postgres takes them with COPY, other databases with one executemany. What it
    is for: 25k rows of a dataset or of a stored matching; bulk_create built and
    dumped an object per row and took several times as long.
    """
    qn = connection.ops.quote_name
    table = qn(model._meta.db_table)
    columns = ", ".join(qn(column_name(model, f)) for f in field_names)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(field_names))
            cursor.executemany(
                f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(rows)
            )


@contextmanager
def cursor_without_jit(*, merge_join: bool = False) -> Iterator[Any]:
    """A cursor in a transaction of its own (a savepoint when nested) with Postgres's
    JIT compiler off, for hand-written joins over many rows: their cost estimate
    passes jit_above_cost, and compiling the plan costs more than it saves (463 ms of
    compare's 1.5 s aggregate of 2 × 1M results, bench_million).

    `merge_join`: no hash join and no parallel workers either, for a join of two
    index scans already in the join's order. Postgres prices a parallel hash join
    lower, but building the hash of 200k rows took 190–300 ms and the workers wait
    for cores on a busy machine: compare's rows query of 2 × 200k results (its lean
    form) 458 → 336 ms median of 5 at load 7.8, 490 → 442 ms of 10 at load 12, on
    2 cores (bench_million's data). Its grouped figures gained nothing from it."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL jit = off")
            if merge_join:
                cursor.execute("SET LOCAL enable_hashjoin = off")
                cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        yield cursor


def table_analyze(model: type[Model]) -> None:
    """Refresh Postgres's statistics of the model's table now (a no-op elsewhere).

    For after a bulk insert that later reads filter on at once: until autovacuum
    gets to it (a minute at best; never where it is off) the planner believes the
    new rows are not there. A dataset of 5,000 items searched in the explorer right
    after its upload was planned as one item: a nested loop taking 1.6 s (bench_serve's
    load test), 20 ms once analyzed; the loop grows with the square of the items."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
