"""Which items of 2–4 runs are "the same item": matched by a metadata key or by input.

Runs on different datasets (another version, or another dataset altogether) share no
item rows, so comparing them, or showing their outputs side by side, first needs a
rule that pairs their items. Two rules:

- ``key``: the item metadata value under a chosen key (``id`` by default), compared as
  text. Items without the key (or with an empty value) match nothing.
- ``input``: identical input after whitespace normalisation (runs of spaces, tabs and
  line breaks become one space; leading and trailing whitespace is dropped). An empty
  input matches nothing.

Runs of one and the same dataset always match item by item, whatever the rule.

A key held by two items of one side is a problem, not a guess: those items match
nothing and are reported in ``duplicates`` (``raise_for_duplicates`` turns that into
a clear error for callers that refuse ambiguous data, as compare does).

The public entry points, all keyword-only:

- ``items_match(datasets=[...], spec=MatchSpec(...)) -> ItemMatching``: reads the
  items' keys (one query per distinct dataset) and matches them in Python. Fine for
  a pairwise review queue or a few hundred thousand items.
- ``match_keys(sides, spec=...)``: the pure matching on (item id, index, key) rows.
- ``item_key_expression(spec, prefix="")``: the key as an ORM expression, for
  selectors that match in SQL (compare at 100k results) with exactly the rule above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from django.db import connection, transaction
from django.db.models import Expression, F, Func, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Collate

from evalsite.core.exceptions import ApplicationError

if TYPE_CHECKING:
    from evalsite.datasets.models import Dataset

MatchMode = Literal["key", "input"]
MATCH_MODES: tuple[MatchMode, ...] = ("key", "input")
DEFAULT_KEY = "id"
KEY_MAX_LENGTH = 100
MIN_SIDES = 2
MAX_SIDES = 4
# How many duplicate keys (and items per key) an error message names.
DUPLICATES_SHOWN = 5

# ASCII whitespace only, and the same class in Python and in SQL, so both matchers
# agree on every input (Python's str.split() would also split on Unicode spaces,
# which Postgres' \s may or may not, depending on the database locale).
WHITESPACE_CLASS = "[ \t\n\r\f\v]+"
_WHITESPACE = re.compile(WHITESPACE_CLASS)
# Text normalise_input changes: a whitespace character other than the space, two
# spaces in a row, or a space at either end.
NEEDS_NORMALISING = "[\t\n\r\f\v]|  |^ | $"
SQLITE_NORMALISE_FUNCTION = "evalsite_normalise_ws"


def normalise_input(text: str | None) -> str:
    """The input as the ``input`` rule compares it: whitespace runs as one space,
    stripped at both ends."""
    return _WHITESPACE.sub(" ", text or "").strip(" ")


@dataclass(frozen=True)
class MatchSpec:
    """How items are matched: ``mode`` "key" (by ``key`` in metadata) or "input"."""

    mode: MatchMode = "key"
    key: str = DEFAULT_KEY

    def __post_init__(self) -> None:
        if self.mode not in MATCH_MODES:
            raise ApplicationError(
                f"Unknown match mode {self.mode!r}: use key or input.",
                field_errors={"match": "use key or input"},
            )
        if self.mode == "key":
            if not self.key.strip():
                raise ApplicationError(
                    "Name the metadata key to match items by (for example id).",
                    field_errors={"key": "required when matching by key"},
                )
            if len(self.key) > KEY_MAX_LENGTH:
                raise ApplicationError(
                    f"The key is longer than {KEY_MAX_LENGTH} characters.",
                    field_errors={"key": f"at most {KEY_MAX_LENGTH} characters"},
                )

    def describe(self) -> str:
        if self.mode == "input":
            return "identical input (whitespace normalised)"
        return f"metadata key “{self.key}”"

    def cache_token(self) -> str:
        return "input" if self.mode == "input" else f"key:{self.key}"


@dataclass(frozen=True)
class DuplicateKey:
    """A key held by several items of one side (side = position of the run/dataset)."""

    side: int
    key: str
    item_ids: tuple[int, ...]
    item_indexes: tuple[int, ...]


class DuplicateKeyError(ApplicationError):
    """Items cannot be matched because a key is not unique on some side."""

    def __init__(self, message: str, *, duplicates: list[DuplicateKey]) -> None:
        super().__init__(message, field_errors={"key": "not unique"})
        self.duplicates = duplicates


# One side's rows: (item id, item index, key or None when the item has none).
KeyRow = tuple[int, int, str | None]


@dataclass
class ItemMatching:
    """The items of N sides (2–4 runs or datasets, in the caller's order) matched.

    - ``matched``: one tuple of item ids per matched item, one id per side, in side
      0's item order.
    - ``unmatched[s]``: side s's item ids whose key some other side lacks. With two
      sides, ``unmatched[0]`` is "only in A" (removed) and ``unmatched[1]`` "only in B"
      (added); see ``only_in_a`` / ``only_in_b``.
    - ``no_key[s]``: side s's items with no key at all (never matched).
    - ``duplicates``: keys held by several items of one side (those items match
      nothing).
    - ``same_dataset``: every side is one dataset, matched item by item.
    """

    spec: MatchSpec
    sides: int
    matched: list[tuple[int, ...]] = field(default_factory=list)
    unmatched: list[list[int]] = field(default_factory=list)
    no_key: list[list[int]] = field(default_factory=list)
    duplicates: list[DuplicateKey] = field(default_factory=list)
    same_dataset: bool = False

    @property
    def only_in_a(self) -> list[int]:
        return self.unmatched[0]

    @property
    def only_in_b(self) -> list[int]:
        return self.unmatched[1]

    @property
    def ok(self) -> bool:
        return not self.duplicates

    def raise_for_duplicates(self, labels: Sequence[str] | None = None) -> None:
        """Raise DuplicateKeyError naming the first duplicate keys, if there are any."""
        if self.duplicates:
            raise DuplicateKeyError(
                duplicates_message(self.duplicates, spec=self.spec, labels=labels),
                duplicates=self.duplicates,
            )


def duplicates_message(
    duplicates: Sequence[DuplicateKey],
    *,
    spec: MatchSpec,
    labels: Sequence[str] | None = None,
) -> str:
    """ "Cannot match items by metadata key “id”: not unique in run A: "q1" (items 3,
    7), …" – what a reviewer needs to fix the data or pick another key."""
    parts = []
    for dup in duplicates[:DUPLICATES_SHOWN]:
        side = labels[dup.side] if labels else f"side {dup.side + 1}"
        # Items as the pages number them, from 1.
        shown = ", ".join(str(i + 1) for i in dup.item_indexes[:DUPLICATES_SHOWN])
        more = "…" if len(dup.item_indexes) > DUPLICATES_SHOWN else ""
        key = dup.key if len(dup.key) <= 60 else dup.key[:57] + "…"
        parts.append(f"{side}: {key!r} (items {shown}{more})")
    rest = len(duplicates) - DUPLICATES_SHOWN
    tail = f"; and {rest} more" if rest > 0 else ""
    hint = " or match by another key" if spec.mode == "key" else " or match by a key"
    return (
        f"Cannot match items by {spec.describe()}: {len(duplicates)} "
        f"value{'s' if len(duplicates) != 1 else ''} held by several items of one run — "
        + "; ".join(parts)
        + tail
        + f". Make the values unique{hint}."
    )


def match_keys(sides: Sequence[Iterable[KeyRow]], *, spec: MatchSpec) -> ItemMatching:
    """Match N sides' (item id, index, key) rows on the key. Pure.

    Steps: group each side's rows by key (None or "" is "no key"); a key held by
    several items of one side is a duplicate there and matches nothing anywhere; the
    keys every side holds exactly once are the matches; the rest are unmatched.
    """
    count = len(sides)
    by_key: list[dict[str, list[tuple[int, int]]]] = []
    no_key: list[list[int]] = []
    for rows in sides:
        groups: dict[str, list[tuple[int, int]]] = {}
        missing: list[int] = []
        for item_id, index, key in rows:
            if key is None or key == "":
                missing.append(item_id)
            else:
                groups.setdefault(key, []).append((index, item_id))
        by_key.append(groups)
        no_key.append(missing)
    duplicates: list[DuplicateKey] = []
    ambiguous: set[str] = set()
    for side, groups in enumerate(by_key):
        for key, members in groups.items():
            if len(members) > 1:
                members.sort()
                ambiguous.add(key)
                duplicates.append(
                    DuplicateKey(
                        side=side,
                        key=key,
                        item_ids=tuple(i for _, i in members),
                        item_indexes=tuple(x for x, _ in members),
                    )
                )
    duplicates.sort(key=lambda d: (d.side, d.item_indexes[0]))
    common = set(by_key[0]) if by_key else set()
    for groups in by_key[1:]:
        common &= set(groups)
    common -= ambiguous
    matched = sorted(
        (tuple(groups[key][0] for groups in by_key) for key in common),
        key=lambda members: members[0][0],
    )
    unmatched = [
        sorted(
            members[0]
            for key, members in groups.items()
            if key not in common and key not in ambiguous
        )
        for groups in by_key
    ]
    return ItemMatching(
        spec=spec,
        sides=count,
        matched=[tuple(item_id for _, item_id in members) for members in matched],
        unmatched=[[item_id for _, item_id in side] for side in unmatched],
        no_key=no_key,
        duplicates=duplicates,
    )


class NormalisedInput(Func):
    """normalise_input() in SQL: Postgres regexp_replace + btrim; SQLite calls the
    Python function itself, registered on the connection by
    ``ensure_sqlite_functions``."""

    arity = 1
    output_field = TextField()

    def as_postgresql(
        self, compiler: Any, connection: Any, **extra_context: Any
    ) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        normalised = f"btrim(regexp_replace({sql}, %s, ' ', 'g'), ' ')"
        # Only text that has something to normalise goes through regexp_replace (the
        # rest is its own normal form): keying 25k single-spaced inputs took 160 ms
        # with the replace on every row, 25 ms with this test first (psql \timing,
        # bench_compare's items, Postgres 15). translate() was no cheaper (72 ms).
        return (
            f"CASE WHEN {sql} ~ %s THEN {normalised} ELSE {sql} END",
            (*params, NEEDS_NORMALISING, *params, WHITESPACE_CLASS, *params),
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        ensure_sqlite_functions()
        sql, params = compiler.compile(self.source_expressions[0])
        return f"{SQLITE_NORMALISE_FUNCTION}({sql})", params


def ensure_sqlite_functions() -> None:
    """Register normalise_input on the SQLite connection (SQLite has no regexp
    replace). Idempotent and cheap; a new connection registers it again on its first
    query through NormalisedInput."""
    if connection.vendor != "sqlite":
        return
    connection.ensure_connection()
    raw: Any = connection.connection
    raw.create_function(
        SQLITE_NORMALISE_FUNCTION, 1, normalise_input, deterministic=True
    )


def item_key_expression(spec: MatchSpec, *, prefix: str = "") -> Expression:
    """The item's match key as an ORM expression (text, NULL or "" when it has none).

    ``prefix`` reaches the item through a relation, e.g. ``"item__"`` on Result.
    """
    if spec.mode == "input":
        return NormalisedInput(F(f"{prefix}input"))
    # KeyTextTransform takes the key literally (a key containing "__" is one key);
    # the cast makes SQLite's numbers text, as Postgres' ->> already gives them.
    return Cast(KeyTextTransform(spec.key, f"{prefix}metadata"), TextField())


def _key_rows(dataset_id: int, spec: MatchSpec) -> list[KeyRow]:
    from evalsite.datasets.models import Item

    rows = (
        Item.objects.filter(dataset_id=dataset_id)
        .annotate(match_key=item_key_expression(spec))
        .order_by("index")
        .values_list("id", "index", "match_key")
    )
    return [(pk, index, None if key is None else str(key)) for pk, index, key in rows]


def items_match(*, datasets: Sequence[Dataset | int], spec: MatchSpec) -> ItemMatching:
    """Match the items of 2–4 datasets (given as models or ids, in side order).

    Steps: refuse fewer than two or more than four sides; when all sides are one
    dataset, every item matches itself; else read each distinct dataset's (id, index,
    key) once and match with ``match_keys``.
    """
    ids = [d if isinstance(d, int) else d.pk for d in datasets]
    if not MIN_SIDES <= len(ids) <= MAX_SIDES:
        raise ApplicationError(
            f"Match {MIN_SIDES} to {MAX_SIDES} runs, not {len(ids)}.",
            field_errors={"runs": f"choose {MIN_SIDES} to {MAX_SIDES} runs"},
        )
    if len(set(ids)) == 1:
        from evalsite.datasets.models import Item

        item_ids = list(
            Item.objects.filter(dataset_id=ids[0])
            .order_by("index")
            .values_list("id", flat=True)
        )
        return ItemMatching(
            spec=spec,
            sides=len(ids),
            matched=[(pk,) * len(ids) for pk in item_ids],
            unmatched=[[] for _ in ids],
            no_key=[[] for _ in ids],
            same_dataset=True,
        )
    rows = {pk: _key_rows(pk, spec) for pk in dict.fromkeys(ids)}
    return match_keys([rows[pk] for pk in ids], spec=spec)


@dataclass
class PairMatching:
    """Two distinct datasets matched, as compare's first page needs them: the counts
    and the matched (A item, B item) id pairs in A's item order, without the lists
    of unmatched ids. Equal to ``pair_matching_from(items_match(...))`` by contract
    (tests/review/test_compare_matching.py checks it on awkward data)."""

    spec: MatchSpec
    items: tuple[int, int]
    no_key: tuple[int, int]
    only: tuple[int, int]  # (only in A = removed, only in B = added)
    matched: list[tuple[int, int]]
    duplicates: list[DuplicateKey] = field(default_factory=list)


def pair_matching_from(matching: ItemMatching) -> PairMatching:
    """The PairMatching of a two-sided ItemMatching (the Python rule's answer)."""
    in_dups = [
        sum(len(d.item_ids) for d in matching.duplicates if d.side == s) for s in (0, 1)
    ]
    matched = [(a, b) for a, b in matching.matched]
    only = (len(matching.unmatched[0]), len(matching.unmatched[1]))
    no_key = (len(matching.no_key[0]), len(matching.no_key[1]))
    return PairMatching(
        spec=matching.spec,
        items=(
            len(matched) + only[0] + no_key[0] + in_dups[0],
            len(matched) + only[1] + no_key[1] + in_dups[1],
        ),
        no_key=no_key,
        only=only,
        matched=matched,
        duplicates=list(matching.duplicates),
    )


def _side_sql(dataset_id: int, spec: MatchSpec) -> tuple[str, tuple[Any, ...]]:
    """One dataset's items as SQL rows (i: id, x: index, k: match key)."""
    from evalsite.datasets.models import Item

    key = item_key_expression(spec)
    if connection.vendor == "postgresql":
        # Compared byte for byte, as the database's deterministic collation compares
        # for equality anyway: the join then sorts or hashes the keys without the
        # locale's rules (77 -> 55 ms for the key join of 2 × 25k items).
        key = Collate(key, "C")
    query = (
        Item.objects.filter(dataset_id=dataset_id)
        .values(i=F("id"), x=F("index"), k=key)
        .order_by()
    )
    sql, params = query.query.sql_with_params()
    return sql, tuple(params)


_KEYED = "k IS NOT NULL AND k <> ''"


def pair_match_ctes(
    *, datasets: tuple[int, int], spec: MatchSpec
) -> tuple[str, list[Any]]:
    """The WITH clause of matching two distinct datasets in SQL, on Postgres and
    SQLite alike: a and b (each side's id i, index x and key k), da and db (keys
    held twice on a side) and m (the matched pairs: ia, ib and A's index ix).

    Steps: key both sides once (the same item_key_expression the Python rule reads);
    count each key per side (GROUP BY); a key held once on each side is a match (a
    hash join). Run it under match_statement()."""
    ds_a, ds_b = datasets
    if ds_a == ds_b:
        raise ValueError("pair_match takes two distinct datasets")
    a_sql, a_params = _side_sql(ds_a, spec)
    b_sql, b_params = _side_sql(ds_b, spec)
    # The duplicate filters in m are hashed subplans, not joins: the planner cannot
    # estimate a grouped key's count (it guesses 200 rows) and, joining on such a
    # guess, picked a nested loop over 25k × 25k rows (minutes, not milliseconds).
    sql = f"""
        WITH a AS ({a_sql}), b AS ({b_sql}),
        da AS (SELECT k FROM a WHERE {_KEYED} GROUP BY k HAVING COUNT(*) > 1),
        db AS (SELECT k FROM b WHERE {_KEYED} GROUP BY k HAVING COUNT(*) > 1),
        m AS (
            SELECT a.i AS ia, b.i AS ib, a.x AS ix
            FROM a JOIN b ON b.k = a.k
            WHERE a.k <> '' AND a.k NOT IN (SELECT k FROM da)
                AND a.k NOT IN (SELECT k FROM db)
        )
    """
    return sql, [*a_params, *b_params]


# The counts of a matching, one row: -1 in the first three columns puts it before
# every pair in pair_match's ORDER BY.
_STATS_SQL = f"""
    SELECT -1, -1, -1,
        (SELECT COUNT(*) FROM a WHERE {_KEYED}),
        (SELECT COUNT(*) FROM da),
        (SELECT COUNT(*) FROM b WHERE {_KEYED}),
        (SELECT COUNT(*) FROM db),
        (SELECT COUNT(*) FROM a WHERE k IS NULL OR k = ''),
        (SELECT COUNT(*) FROM b WHERE k IS NULL OR k = ''),
        (SELECT COUNT(*) FROM m)
"""


@contextmanager
def match_statement() -> Iterator[Any]:
    """A cursor for statements on pair_match_ctes, in a transaction of its own
    (a savepoint when nested)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The planner guesses 200 distinct keys, so ~800k join rows, and JIT
            # compiles the plan: 31 ms of a 130 ms query (EXPLAIN ANALYZE, 25k items
            # a side) spent compiling for a 25k-row join.
            cursor.execute("SET LOCAL jit = off")
        yield cursor


@dataclass(frozen=True)
class PairCounts:
    """How two datasets match, counted without listing the pairs (pair_match_counts).
    With duplicates, the figures are the Python rule's, as pair_match's are."""

    items: tuple[int, int]
    no_key: tuple[int, int]
    only: tuple[int, int]
    matched: int
    duplicates: tuple[DuplicateKey, ...] = ()


def _sql_counts(row: Sequence[Any]) -> PairCounts | None:
    """The counts from _STATS_SQL's row; None when a side holds a key twice (the
    Python rule answers then)."""
    _, _, _, keyed_a, dups_a, keyed_b, dups_b, no_key_a, no_key_b, matched = row
    if dups_a or dups_b:
        return None
    return PairCounts(
        items=(keyed_a + no_key_a, keyed_b + no_key_b),
        no_key=(no_key_a, no_key_b),
        only=(keyed_a - matched, keyed_b - matched),
        matched=matched,
    )


def _python_rule(datasets: tuple[int, int], spec: MatchSpec) -> PairMatching:
    return pair_matching_from(items_match(datasets=list(datasets), spec=spec))


def pair_match_counts(*, datasets: tuple[int, int], spec: MatchSpec) -> PairCounts:
    """The counts of pair_match without reading the pairs (a caller that stores
    them inserts them from pair_match_ctes' m in SQL)."""
    sql, params = pair_match_ctes(datasets=datasets, spec=spec)
    with match_statement() as cursor:
        cursor.execute(sql + _STATS_SQL, params)
        counts = _sql_counts(cursor.fetchone())
    if counts is not None:
        return counts
    matching = _python_rule(datasets, spec)
    return PairCounts(
        items=matching.items,
        no_key=matching.no_key,
        only=matching.only,
        matched=len(matching.matched),
        duplicates=tuple(matching.duplicates),
    )


def pair_match(*, datasets: tuple[int, int], spec: MatchSpec) -> PairMatching:
    """Match two distinct datasets' items in SQL (pair_match_ctes), with the pairs
    listed in A's item order. A key held twice on a side is rare and an error for
    compare: then the Python rule (items_match) answers, so the duplicates reported
    (ids, indexes, order) are its own.

    Why: matching 2 × 25k items in Python took 330–390 ms cold (250 ms of it the
    dict work in match_keys, the rest reading the keys); this query with its 25k
    pairs read back takes 90–105 ms by key, 130–140 ms by input (bench_compare's
    datasets, Postgres 15, 24 Nov 2026).
    """
    sql, params = pair_match_ctes(datasets=datasets, spec=spec)
    # One statement, one pass over each side's keys: the stats row first (ix -1,
    # below every item index), then the pairs in A's item order.
    sql += f"""
        {_STATS_SQL}
        UNION ALL
        SELECT ix, ia, ib, 0, 0, 0, 0, 0, 0, 0 FROM m
        ORDER BY 1, 2
    """
    with match_statement() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    counts = _sql_counts(rows[0])
    if counts is None:
        return _python_rule(datasets, spec)
    return PairMatching(
        spec=spec,
        items=counts.items,
        no_key=counts.no_key,
        only=counts.only,
        matched=[(ia, ib) for _, ia, ib, *_ in rows[1:]],
    )
