"""Two datasets' items matched once and kept (models.DatasetMatch).

Dataset items never change after an upload, so the matching of two datasets by one
rule (selectors.matching.pair_match) is computed once, stored, and read back by
every later compare of runs on those datasets. A new dataset version is matched with
its previous version right after the upload (tasks.dataset_versions_match), so the
first compare of the two versions finds its matching ready.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from evalsite.datasets.matching.selectors import (
    DEFAULT_KEY,
    DuplicateKey,
    MatchSpec,
    match_statement,
    pair_match_counts,
    pair_match_ctes,
)
from evalsite.datasets.models import Dataset, DatasetMatch, DatasetMatchPair
from evalsite.lib.db import column_name

# A stored matching this young is never dropped to make room (see _make_room).
EVICT_AFTER = timedelta(minutes=5)
# The rules matched ahead of time for a new version: what compare offers first.
AHEAD_OF_TIME_SPECS = (MatchSpec(mode="key", key=DEFAULT_KEY), MatchSpec(mode="input"))

# The task name predates the move from the review app; workers and queued messages know it.
DATASET_VERSIONS_MATCH_TASK = "datasets.versions_match"


def match_duplicates(match: DatasetMatch) -> list[DuplicateKey]:
    """The keys held by several items of one side (side 0: A, 1: B)."""
    return [
        DuplicateKey(
            side=int(d["side"]),
            key=str(d["key"]),
            item_ids=tuple(d["item_ids"]),
            item_indexes=tuple(d["item_indexes"]),
        )
        for d in match.duplicates
    ]


def dataset_match_get_or_create(
    *, datasets: tuple[int, int], spec: MatchSpec
) -> DatasetMatch:
    """The stored matching of two distinct datasets by `spec`; matched now and
    stored with its pairs when no row holds it yet. Two requests matching the same
    datasets at once both match; the first stored is kept, and is the same.

    Steps: count the matching in SQL; make room under the project's cap; store the
    row; insert its pairs straight from the matching's SQL (INSERT … SELECT), so no
    pair passes through Python however large the datasets.

    Returned unsaved (pk None), so that a viewer trying keys leaves no row behind:
    - a matching without a single pair (nothing to join on; it recounts as fast as
      it reads);
    - a key held twice on a side: compare refuses it, naming the duplicates that
      the Python rule reports (pair_match_counts), which can be long.
    """
    ds_a, ds_b = datasets
    rule = spec.cache_token()
    found = DatasetMatch.objects.filter(
        dataset_a_id=ds_a, dataset_b_id=ds_b, rule=rule
    ).first()
    if found is not None:
        return found
    counts = pair_match_counts(datasets=datasets, spec=spec)
    row = DatasetMatch(
        dataset_a_id=ds_a,
        dataset_b_id=ds_b,
        rule=rule,
        items_a=counts.items[0],
        items_b=counts.items[1],
        matched=counts.matched,
        only_in_a=counts.only[0],
        only_in_b=counts.only[1],
        no_key_a=counts.no_key[0],
        no_key_b=counts.no_key[1],
        duplicates=[dataclasses.asdict(d) for d in counts.duplicates],
    )
    if counts.duplicates or row.matched == 0:
        return row
    try:
        with transaction.atomic():
            _make_room(datasets=datasets, pairs=row.matched)
            row.save()
            _insert_pairs(row, spec=spec)
    except IntegrityError:
        # Stored meanwhile by a concurrent compare (or a dataset deleted meanwhile):
        # theirs is the same matching.
        found = DatasetMatch.objects.filter(
            dataset_a_id=ds_a, dataset_b_id=ds_b, rule=rule
        ).first()
        if found is None:
            raise
        return found
    _analyze_pairs()
    return row


def _make_room(*, datasets: tuple[int, int], pairs: int) -> None:
    """Drop the project's oldest stored matchings until `pairs` more fit under
    settings.COMPARE_STORED_PAIRS_MAX. Matchings stored in the last EVICT_AFTER
    stay: a compare of 3–4 runs (or another reviewer's) may be joining on them
    right now. A matching larger than the cap is still stored (compare joins on
    it)."""
    project_id = (
        Dataset.objects.filter(pk=datasets[0])
        .values_list("project_id", flat=True)
        .first()
    )
    if project_id is None:
        return  # deleted meanwhile: the save that follows fails on its foreign key
    stored = list(
        DatasetMatch.objects.filter(dataset_a__project_id=project_id)
        .order_by("-created_at", "-id")
        .values_list("pk", "matched", "created_at")
    )
    budget = settings.COMPARE_STORED_PAIRS_MAX - pairs
    recent = timezone.now() - EVICT_AFTER
    kept = 0
    dropped: list[int] = []
    for pk, matched, created_at in stored:
        if created_at >= recent:
            kept += matched
        elif kept + matched > budget:
            dropped.append(pk)
        else:
            kept += matched
    if dropped:
        DatasetMatch.objects.filter(pk__in=dropped).delete()


def _insert_pairs(match: DatasetMatch, *, spec: MatchSpec) -> None:
    """Insert the matching's pairs from its SQL (pair_match_ctes' m)."""
    ctes, params = pair_match_ctes(
        datasets=(match.dataset_a_id, match.dataset_b_id), spec=spec
    )
    qn = connection.ops.quote_name
    columns = ", ".join(
        qn(column_name(DatasetMatchPair, f)) for f in ("match", "item_a", "item_b")
    )
    table = qn(DatasetMatchPair._meta.db_table)
    with match_statement() as cursor:
        cursor.execute(
            f"{ctes} INSERT INTO {table} ({columns}) SELECT %s, ia, ib FROM m",
            [*params, match.pk],
        )


def _analyze_pairs() -> None:
    """Refresh the planner's statistics of the pairs' table after a matching is
    stored. Without them Postgres expected one pair for the new matching where there
    were 25k and joined the results by nested loops: the four scorers' figures took
    267 ms instead of 93 (bench_compare). ANALYZE samples at most 30k rows, ~25 ms.
    A database user that does not own the table gets a warning, not an error."""
    if connection.vendor != "postgresql":
        return
    table = connection.ops.quote_name(DatasetMatchPair._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")


def dataset_versions_match(*, dataset_id: int) -> list[DatasetMatch]:
    """Match a dataset with the previous version of its name by the rules compare
    offers first; [] for a first version (or a dataset deleted since)."""
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    if dataset is None:
        return []
    previous = (
        Dataset.objects.filter(
            project_id=dataset.project_id,
            name=dataset.name,
            version__lt=dataset.version,
        )
        .order_by("-version")
        .values_list("pk", flat=True)
        .first()
    )
    if previous is None:
        return []
    return [
        dataset_match_get_or_create(datasets=(previous, dataset.pk), spec=spec)
        for spec in AHEAD_OF_TIME_SPECS
    ]
