"""Item matching across datasets: by metadata key or identical input, duplicates."""

from __future__ import annotations

import pytest

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.matching.selectors import (
    DuplicateKeyError,
    MatchSpec,
    items_match,
    match_keys,
    normalise_input,
    pair_match,
    pair_matching_from,
)
from tests.factories import DatasetFactory


def test_normalise_input_collapses_ascii_whitespace_only():
    assert normalise_input("  What\tis\n\n  Paris?  ") == "What is Paris?"
    assert normalise_input(None) == ""
    # a non-breaking space is text, not whitespace, on both matchers
    assert normalise_input("a\u00a0b") == "a\u00a0b"


def test_match_keys_reports_matched_added_removed_and_no_key():
    a = [(1, 0, "q1"), (2, 1, "q2"), (3, 2, "q3"), (4, 3, None)]
    b = [(11, 0, "q3"), (12, 1, "q1"), (13, 2, "q9"), (14, 3, "")]
    m = match_keys([a, b], spec=MatchSpec())
    assert m.matched == [(1, 12), (3, 11)]  # in A's item order
    assert m.only_in_a == [2] and m.only_in_b == [13]
    assert m.no_key == [[4], [14]]
    assert m.ok and not m.duplicates


def test_match_keys_duplicates_match_nothing_and_are_reported():
    a = [(1, 0, "q1"), (2, 1, "q1"), (3, 2, "q2")]
    b = [(11, 0, "q1"), (12, 1, "q2")]
    m = match_keys([a, b], spec=MatchSpec())
    assert m.matched == [(3, 12)]
    assert m.only_in_b == []  # q1 is ambiguous, not "added"
    (dup,) = m.duplicates
    assert (dup.side, dup.key, dup.item_ids, dup.item_indexes) == (
        0,
        "q1",
        (1, 2),
        (0, 1),
    )
    with pytest.raises(DuplicateKeyError) as err:
        m.raise_for_duplicates(["run A", "run B"])
    assert "run A: 'q1' (items 1, 2)" in err.value.message
    assert "metadata key “id”" in err.value.message


def test_match_keys_three_sides_match_only_keys_all_hold():
    m = match_keys(
        [
            [(1, 0, "x"), (2, 1, "y")],
            [(3, 0, "y"), (4, 1, "x")],
            [(5, 0, "x")],
        ],
        spec=MatchSpec(),
    )
    assert m.matched == [(1, 4, 5)]
    assert m.unmatched == [[2], [3], []]


@pytest.mark.parametrize(
    ("mode", "key", "field"),
    [("fuzzy", "id", "match"), ("key", " ", "key"), ("key", "k" * 101, "key")],
)
def test_match_spec_rejects_bad_input(mode, key, field):
    with pytest.raises(ApplicationError) as err:
        MatchSpec(mode=mode, key=key)
    assert field in err.value.field_errors


@pytest.mark.django_db
def test_items_match_by_key_across_versions(project):
    v1 = DatasetFactory(
        project=project,
        name="qa",
        rows=[
            {"input": "a", "metadata": {"id": 1}},
            {"input": "b", "metadata": {"id": "2"}},
            {"input": "c", "metadata": {"id": 3}},
        ],
    )
    v2 = DatasetFactory(
        project=project,
        name="qa",
        rows=[
            {"input": "c changed", "metadata": {"id": 3}},
            {"input": "a", "metadata": {"id": "1"}},  # a string now: still "1"
            {"input": "new", "metadata": {"id": 4}},
        ],
    )
    items1 = list(v1.items.order_by("index").values_list("id", flat=True))
    items2 = list(v2.items.order_by("index").values_list("id", flat=True))
    m = items_match(datasets=[v1, v2], spec=MatchSpec(mode="key", key="id"))
    assert m.matched == [(items1[0], items2[1]), (items1[2], items2[0])]
    assert m.only_in_a == [items1[1]] and m.only_in_b == [items2[2]]


@pytest.mark.django_db
def test_items_match_by_input_ignores_whitespace(project):
    a = DatasetFactory(
        project=project,
        rows=[{"input": "What is  Paris?"}, {"input": "Only A"}, {"input": ""}],
    )
    b = DatasetFactory(
        project=project,
        rows=[{"input": "What is\nParis? "}, {"input": "Only B"}],
    )
    ia = list(a.items.order_by("index").values_list("id", flat=True))
    ib = list(b.items.order_by("index").values_list("id", flat=True))
    m = items_match(datasets=[a.pk, b.pk], spec=MatchSpec(mode="input"))
    assert m.matched == [(ia[0], ib[0])]
    assert m.only_in_a == [ia[1]] and m.only_in_b == [ib[1]]
    assert m.no_key == [[ia[2]], []]


@pytest.mark.django_db
def test_items_match_same_dataset_matches_item_by_item(project):
    ds = DatasetFactory(project=project, rows=[{"input": "x"}, {"input": "x"}])
    m = items_match(datasets=[ds, ds], spec=MatchSpec(mode="input"))
    assert m.same_dataset and len(m.matched) == 2 and m.ok


@pytest.mark.django_db
def test_items_match_refuses_one_or_five_sides(project):
    ds = DatasetFactory(project=project, rows=[])
    for sides in ([ds], [ds] * 5):
        with pytest.raises(ApplicationError):
            items_match(datasets=sides, spec=MatchSpec())


def _tricky_rows(side: int) -> list[dict]:
    """Items whose keys and inputs trip a careless matcher: numbers vs strings,
    missing and empty keys, whitespace-only differences, unicode, duplicates."""
    rows = [
        {"input": "What is  Paris?", "metadata": {"id": 1}},
        {"input": " Tabs\tand\nlines ", "metadata": {"id": "2"}},
        {"input": "café", "metadata": {"id": "é"}},
        {"input": "cafe\u0301", "metadata": {"id": "e\u0301"}},  # not NFC-equal
        {"input": "a\u00a0b", "metadata": {"id": 1.5}},
        {"input": "   ", "metadata": {}},  # no key, empty input
        {"input": "no key", "metadata": {"id": ""}},
        {"input": "only here " + str(side), "metadata": {"id": f"only-{side}"}},
        {"input": "nested", "metadata": {"id": {"x": 1}}},
    ]
    if side == 1:
        rows = [
            {**rows[i], "input": rows[i]["input"].replace(" ", "\n ")}
            for i in (4, 3, 2, 1, 0)
        ] + rows[5:]
        rows[-1] = {"input": "nested", "metadata": {"id": {"x": 1}}}
    return rows


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["key", "input"])
@pytest.mark.parametrize("duplicated", [False, True])
def test_pair_match_in_sql_equals_the_python_rule(project, mode, duplicated):
    a_rows, b_rows = _tricky_rows(0), _tricky_rows(1)
    if duplicated:
        # a key twice on one side (and an input twice): the SQL path must report
        # exactly the Python rule's duplicates
        a_rows.append({"input": "What is Paris?", "metadata": {"id": "1"}})
    a = DatasetFactory(project=project, rows=a_rows)
    b = DatasetFactory(project=project, rows=b_rows)
    spec = MatchSpec(mode=mode)
    in_sql = pair_match(datasets=(a.pk, b.pk), spec=spec)
    in_python = pair_matching_from(items_match(datasets=[a, b], spec=spec))
    assert in_sql == in_python
    assert bool(in_sql.duplicates) == duplicated
    if not duplicated:
        # the cases the data is about did match (not an empty result both ways)
        assert len(in_sql.matched) >= 4
        assert in_sql.only == (1, 1) if mode == "key" else in_sql.only[0] >= 1
    ia = list(a.items.order_by("index").values_list("id", flat=True))
    matched_a = [x for x, _ in in_sql.matched]
    assert matched_a == sorted(matched_a, key=ia.index)  # in A's item order


@pytest.mark.django_db
def test_pair_match_counts_items_without_a_key(project):
    a = DatasetFactory(project=project, rows=[{"input": "x", "metadata": {}}])
    b = DatasetFactory(project=project, rows=[{"input": "x", "metadata": {"id": 1}}])
    m = pair_match(datasets=(a.pk, b.pk), spec=MatchSpec())
    assert (m.items, m.no_key, m.only, m.matched) == ((1, 1), (1, 0), (0, 1), [])
