"""Export completeness on a large run: every result exactly once, streamed, in CSV and
Parquet, across the chunk (2,000 rows) and row-group (10,000 rows) boundaries.

20,002 results (10,001 items × 2 scorers): neither a multiple of a chunk nor of a row
group, so the last partial chunk and row group are exported too. No timings here: those
are in `make bench` (bench/bench_million.py)."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from evalsite.datasets.models import Item
from evalsite.evals.models import Result
from evalsite.exports import services
from tests.conftest import login
from tests.exports.builders import make_run_with_score
from tests.factories import (
    CommentFactory,
    DatasetFactory,
    OverrideFactory,
    ScorerConfigFactory,
)

pytestmark = pytest.mark.django_db

N_ITEMS = 10_001


@pytest.fixture
def big_run(project, owner):
    dataset = DatasetFactory(project=project, name="big", rows=None)
    Item.objects.bulk_create(
        Item(
            dataset=dataset,
            index=i,
            input=f"Question {i}, with a comma and a\nnewline",
            output=f"Answer {i}",
            metadata={"n": i},
        )
        for i in range(N_ITEMS)
    )
    dataset.item_count = N_ITEMS
    dataset.save(update_fields=["item_count"])
    run = make_run_with_score(
        project,
        dataset,
        [
            ScorerConfigFactory(project=project, kind="faithfulness"),
            ScorerConfigFactory(project=project, kind="hallucination"),
        ],
    )
    # Half the runs' results fail, so a filter has something to narrow; a few carry
    # what the export reads per chunk (override notes, comments), spread over chunks.
    Result.objects.filter(run=run, item__index__lt=N_ITEMS // 2).update(
        final_score=0.25, final_passed=False
    )
    for result in Result.objects.filter(run=run).order_by("id")[::1_999]:
        OverrideFactory(result=result, kind="score", new_value=0.1, note="n")
        CommentFactory(result=result, user=owner, body="checked")
    return run


def _url(run, fmt: str, query: str = "") -> str:
    url = reverse(
        f"exports:run_{fmt}", kwargs={"project_id": run.project_id, "run_id": run.pk}
    )
    return f"{url}?{query}" if query else url


def _streamed(response) -> tuple[bytes, int]:
    assert response.status_code == 200
    assert response.streaming, "exports must stream"
    parts = list(response.streaming_content)
    return b"".join(parts), len(parts)


def test_csv_export_of_a_large_run_has_every_result_exactly_once(
    client, owner, big_run
):
    login(client, owner)
    body, pieces = _streamed(client.get(_url(big_run, "csv")))
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    exported = Counter(int(row["result_id"]) for row in rows)
    expected = set(Result.objects.filter(run=big_run).values_list("id", flat=True))
    assert len(expected) == 2 * N_ITEMS
    assert set(exported) == expected
    assert max(exported.values()) == 1
    # Streamed as it is read: at least one piece per chunk of the database cursor.
    assert pieces >= len(expected) // services.CHUNK_SIZE
    # The rows carry their own item, not a neighbour's (a chunk boundary would show).
    by_id = dict(Result.objects.filter(run=big_run).values_list("id", "item__index"))
    assert all(
        row["input"]
        == f"Question {by_id[int(row['result_id'])]}, with a comma and a\nnewline"
        for row in rows
    )
    assert sum(1 for row in rows if row["override_notes"]) == len(
        Result.objects.filter(run=big_run, overrides__isnull=False).distinct()
    )


def test_parquet_export_of_a_large_run_has_every_result_exactly_once(
    client, owner, big_run
):
    login(client, owner)
    body, _ = _streamed(client.get(_url(big_run, "parquet")))
    parquet = pq.ParquetFile(io.BytesIO(body))
    expected = set(Result.objects.filter(run=big_run).values_list("id", flat=True))
    # One row group per PARQUET_ROWS rows, the last one partial.
    groups = -(-len(expected) // services.PARQUET_ROWS)
    assert parquet.metadata.num_row_groups == groups
    ids = parquet.read(columns=["result_id"]).column("result_id").to_pylist()
    assert len(ids) == len(expected)
    assert set(ids) == expected
    comments = parquet.read(columns=["result_id", "comment_count"]).to_pylist()
    commented = {r["result_id"] for r in comments if r["comment_count"]}
    assert commented == set(
        Result.objects.filter(run=big_run, comments__isnull=False).values_list(
            "id", flat=True
        )
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_filtered_export_of_a_large_run_has_exactly_the_matching_results(
    client, owner, big_run, fmt
):
    login(client, owner)
    body, _ = _streamed(client.get(_url(big_run, fmt, "final=fail")))
    if fmt == "csv":
        ids = [
            int(r["result_id"])
            for r in csv.DictReader(io.StringIO(body.decode("utf-8")))
        ]
    else:
        table = pq.read_table(io.BytesIO(body), columns=["result_id"])
        ids = table.column("result_id").to_pylist()
    expected = set(
        Result.objects.filter(run=big_run, final_passed=False).values_list(
            "id", flat=True
        )
    )
    assert len(expected) == 2 * (N_ITEMS // 2)
    assert len(ids) == len(expected)
    assert set(ids) == expected
