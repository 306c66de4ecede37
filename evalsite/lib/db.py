"""Helpers for the few statements written in SQL by hand."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import Field, Model, QuerySet
from django.db.models.query import (
    ModelIterable,
    ValuesListIterable,
    get_related_populators,
)
from django.db.transaction import TransactionManagementError


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


# Values that stand for a query's inputs while its SQL is compiled, each told apart
# from the others by its value. Inside a 4-byte integer column's range: the ORM
# compiles a comparison with a value beyond it away (always true or false).
_STAND_IN_BASE = 2_100_000_000
# Kept on the connection object (Django's DatabaseWrapper, one per thread) that
# compiled them: a compiler holds that object and executes through it, so a thread
# given another connection (tests replace them; a thread pool may) starts afresh
# instead of running on a closed or foreign one. Keys are shapes (a project with 40
# open queues is a shape of its own); the few in use stay, and the cache never grows
# without end.
_CACHE_ATTR = "_evalsite_compiled_once"
_COMPILED_MAX = 512


def compiled_cache(alias: str = DEFAULT_DB_ALIAS) -> dict[Hashable, Any]:
    """The compiled queries kept on this thread's connection `alias`."""
    wrapper = connections[alias]
    cache: dict[Hashable, Any] = wrapper.__dict__.setdefault(_CACHE_ATTR, {})
    return cache


@dataclass(frozen=True)
class _Compiled:
    queryset: QuerySet[Any]
    compiler: Any  # the SQLCompiler that compiled it, with its select and klass_info
    sql: str
    params: tuple[Any, ...]
    slots: dict[int, str]  # parameter index -> name in `values`


def compiled_once(
    key: Hashable,
    build: Callable[[Mapping[str, int]], QuerySet[Any]],
    values: Mapping[str, int],
) -> list[Any]:
    """`list(build(values))`, with the queryset's SQL compiled once per connection
    (see `compiled_cache`) and `key`, which must name everything the query's shape
    depends on besides `values` (the length of an IN list, a branch taken): building
    and compiling a queryset of joins and subqueries costs more CPU than the
    database takes to answer it. For querysets of model instances (select_related and annotations
    included) and of values_list tuples; the rows go through the compiler's own
    converters and Django's own populators, as the ORM's iteration does.

    The first call builds the queryset with stand-ins for `values` (integers: ids
    and positions), finds each one among the compiled parameters, and keeps the SQL
    and its compiler; later calls put their values in those places. Whatever it
    cannot keep (a stand-in the ORM changed or dropped, an empty result known
    without asking, prefetching, a flat or named values_list) is built and run as
    usual."""
    cache = compiled_cache()
    compiled = cache.get(key)
    if compiled is None:
        compiled = _compile(build, values)
        if compiled is None:
            return list(build(values))
        if len(cache) >= _COMPILED_MAX:
            cache.clear()
        cache[key] = compiled
    qs, compiler = compiled.queryset, compiled.compiler
    if qs.query.select_for_update and compiler.connection.get_autocommit():
        # The ORM's own check, which the kept SQL no longer passes through.
        raise TransactionManagementError(
            "select_for_update cannot be used outside of a transaction."
        )
    # A stand-in may come wrapped in a typed integer (psycopg's Int4 inside an
    # expression): the value takes the same wrapper.
    bound = [
        type(p)(values[compiled.slots[i]]) if i in compiled.slots else p
        for i, p in enumerate(compiled.params)
    ]
    with compiler.connection.cursor() as cursor:
        cursor.execute(compiled.sql, bound)
        rows = cursor.fetchall()
    if compiler.has_extra_select:
        rows = [row[: compiler.col_count] for row in rows]
    if qs._iterable_class is ValuesListIterable:
        return list(compiler.results_iter([rows], tuple_expected=True))
    return list(_instances(qs, compiler, rows))


def _compile(
    build: Callable[[Mapping[str, int]], QuerySet[Any]], values: Mapping[str, int]
) -> _Compiled | None:
    stand_ins = {name: _STAND_IN_BASE + i for i, name in enumerate(values)}
    by_value = {v: name for name, v in stand_ins.items()}
    qs = build(stand_ins)
    internals: Any = qs  # what the ORM's own iteration looks at
    if (
        internals._iterable_class not in (ModelIterable, ValuesListIterable)
        or internals._known_related_objects
        or internals._prefetch_related_lookups
        or (internals._iterable_class is ModelIterable and qs.query.combinator)
    ):
        return None
    if qs.db != DEFAULT_DB_ALIAS:
        return None  # kept per connection of the default database only
    compiler = qs.query.get_compiler(qs.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return None
    ints = {
        i: int(p)
        for i, p in enumerate(params)
        if isinstance(p, int) and not isinstance(p, bool)
    }
    slots = {i: by_value[p] for i, p in ints.items() if p in by_value}
    if set(slots.values()) != set(values) or any(
        p >= _STAND_IN_BASE and i not in slots for i, p in ints.items()
    ):
        return None
    return _Compiled(qs, compiler, sql, tuple(params), slots)


def _instances(qs: QuerySet[Any], compiler: Any, rows: list[Any]) -> Iterator[Any]:
    """Model instances from `rows`, as django.db.models.query.ModelIterable makes
    them (less its known related objects, which `_compile` refuses)."""
    select, klass_info = compiler.select, compiler.klass_info
    annotation_col_map = compiler.annotation_col_map
    model_cls = klass_info["model"]
    select_fields = klass_info["select_fields"]
    start, end = select_fields[0], select_fields[-1] + 1
    init_list = [f[0].target.attname for f in select[start:end]]
    # Django 5.2's signature (the stubs name a later one's fetch_mode).
    populators: Any = get_related_populators
    related_populators = populators(klass_info, select, qs.db)
    for row in compiler.results_iter([rows]):
        obj = model_cls.from_db(qs.db, init_list, row[start:end])
        for populator in related_populators:
            populator.populate(row, obj)
        if annotation_col_map:
            for attr_name, col_pos in annotation_col_map.items():
                setattr(obj, attr_name, row[col_pos])
        yield obj
