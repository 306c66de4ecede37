"""The explorer's text search over an item's input and output."""

from __future__ import annotations

import pytest
from django.db import connection

from evalsite.datasets.models import Dataset, Item
from evalsite.datasets.selectors import ItemSearchText, items_matching
from tests.factories import DatasetFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def _dataset(project, name: str, rows: list[tuple[str, str]]) -> Dataset:
    return DatasetFactory(
        project=project,
        name=name,
        rows=[{"input": inp, "output": out} for inp, out in rows],
    )


def _matches(dataset: Dataset, text: str) -> list[int]:
    return sorted(
        items_matching(dataset_id=dataset.pk, text=text).values_list("index", flat=True)
    )


def test_search_matches_input_or_output_ignoring_case(project):
    dataset = _dataset(
        project,
        "support",
        [
            ("Where is the Eiffel tower?", "In Paris."),
            ("What is 100% refundable?", "Orders under_50 EUR."),
            ("How do I export?", "Use File > Export; the eiffel theme too."),
            ("Unrelated", "Nothing here"),
        ],
    )
    assert _matches(dataset, "EIFFEL") == [0, 2]
    assert _matches(dataset, "paris") == [0]
    # LIKE's wildcards in the query are plain characters.
    assert _matches(dataset, "100%") == [1]
    assert _matches(dataset, "under_50") == [1]
    assert _matches(dataset, "%") == [1]
    assert _matches(dataset, "no such words") == []


def test_search_never_matches_across_input_and_output(project):
    dataset = _dataset(project, "split", [("ends with foo", "bar starts it")])
    assert _matches(dataset, "foo") == [0]
    assert _matches(dataset, "foobar") == []
    assert _matches(dataset, "foo bar") == []
    assert _matches(dataset, "foo\x1fbar") == []  # the separator cannot be searched


def test_search_stays_in_its_dataset(project):
    mine = _dataset(project, "mine", [("alpha question", "answer")])
    _dataset(ProjectFactory(name="Other"), "theirs", [("alpha question", "answer")])
    assert _matches(mine, "alpha") == [0]
    assert items_matching(dataset_id=mine.pk, text="alpha").count() == 1


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the trigram index is Postgres only"
)
def test_search_expression_is_the_one_the_trigram_index_holds(project):
    """If the query's expression drifts from migration 0003's, Postgres can no longer
    use the index and every search reads the whole dataset."""
    _dataset(project, "plan", [("refund policy", "within 5 days")])
    # Without the dataset condition, whose b-tree Postgres could use instead.
    sql, params = (
        Item.objects.alias(search_text=ItemSearchText())
        .filter(search_text__contains="REFUND")
        .values("id")
        .query.sql_with_params()
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "datasets_item_text_trgm" in plan, plan
