"""Stored matchings of two datasets (datasets.matching.services): matched once,
read by every later compare, matched ahead of time when a new version is uploaded."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.compare.selectors import match_summary
from evalsite.datasets.matching.selectors import MatchSpec, pair_match
from evalsite.datasets.matching.services import (
    dataset_match_get_or_create,
    dataset_versions_match,
    match_duplicates,
)
from evalsite.datasets.models import Dataset, DatasetMatch, DatasetMatchPair
from evalsite.datasets.services import dataset_create
from evalsite.datasets.tasks import dataset_versions_match_task
from tests.conftest import login
from tests.datasets.conftest import upload
from tests.factories import DatasetFactory
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db


def _rows(keys: list[str]) -> list[dict]:
    return [
        {"input": f"Question {k}?", "output": f"Answer {k}.", "metadata": {"id": k}}
        for k in keys
    ]


def _jsonl(keys: list[str]) -> SimpleUploadedFile:
    return upload("qa.jsonl", "\n".join(json.dumps(row) for row in _rows(keys)))


def _pairs(match: DatasetMatch) -> list[tuple[int, int]]:
    return sorted(match.pairs.values_list("item_a", "item_b"))


def test_stored_matching_is_the_sql_matching_and_is_read_back(project):
    v1 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b", "c", ""]))
    v2 = DatasetFactory(project=project, name="qa", rows=_rows(["c", "a", "d"]))
    spec = MatchSpec()
    expected = pair_match(datasets=(v1.pk, v2.pk), spec=spec)

    stored = dataset_match_get_or_create(datasets=(v1.pk, v2.pk), spec=spec)
    assert _pairs(stored) == sorted(expected.matched) and stored.matched == 2
    assert (stored.items_a, stored.items_b) == expected.items == (4, 3)
    assert (stored.only_in_a, stored.only_in_b) == expected.only == (1, 1)
    assert (stored.no_key_a, stored.no_key_b) == expected.no_key == (1, 0)

    # Read back, not matched again: one query, the stored row.
    with CaptureQueriesContext(connection) as queries:
        again = dataset_match_get_or_create(datasets=(v1.pk, v2.pk), spec=spec)
    assert again.pk == stored.pk and len(queries) == 1
    assert _pairs(again) == _pairs(stored)
    # Another rule is another matching.
    by_input = dataset_match_get_or_create(
        datasets=(v1.pk, v2.pk), spec=MatchSpec(mode="input")
    )
    assert by_input.pk != stored.pk and DatasetMatch.objects.count() == 2


def test_duplicates_are_reported_on_the_compare_side_and_not_stored(
    client, viewer, project
):
    """A key held twice is the Python rule's to report (ids and indexes), and
    compare refuses it: nothing is stored for it, however often it is tried."""
    v1 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b"]))
    v2 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b", "b"]))
    matching = dataset_match_get_or_create(datasets=(v1.pk, v2.pk), spec=MatchSpec())
    assert matching.pk is None and not DatasetMatch.objects.exists()
    [dup] = match_duplicates(matching)
    assert (dup.side, dup.key, dup.item_indexes) == (1, "b", (1, 2))
    assert matching.matched == 1  # "a"
    a = make_run(project, dataset=v1)
    c = make_run(project, dataset=v2)
    # As run C of a three-way compare, the duplicate is C's.
    summary = match_summary(run_a=a, run_b=c, spec=MatchSpec(), side_b=2)
    assert [d.side for d in summary.duplicates] == [2]
    response = login(client, viewer).get(f"/api/runs/{a.pk}/compare/{c.pk}")
    assert (
        response.status_code == 400 and "'b' (items 2, 3)" in response.content.decode()
    )
    assert not DatasetMatch.objects.exists()


def test_a_matching_goes_with_its_datasets(project):
    v1 = DatasetFactory(project=project, name="qa", rows=_rows(["a"]))
    v2 = DatasetFactory(project=project, name="qa", rows=_rows(["a"]))
    dataset_match_get_or_create(datasets=(v1.pk, v2.pk), spec=MatchSpec())
    v2.delete()
    assert not DatasetMatch.objects.exists()
    assert not DatasetMatchPair.objects.exists()


def test_a_new_version_is_matched_with_the_previous_one_after_the_upload(
    project, owner, django_capture_on_commit_callbacks, settings
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        v1 = dataset_create(
            project=project, user=owner, file=_jsonl(["a", "b"]), name="qa"
        )
    # A first version has nothing to match (its one task refreshes statistics).
    assert len(callbacks) == 1 and not DatasetMatch.objects.exists()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        v2 = dataset_create(
            project=project, user=owner, file=_jsonl(["b", "c"]), name="qa"
        )
    assert len(callbacks) == 2
    stored = {m.rule: m for m in DatasetMatch.objects.all()}
    assert set(stored) == {"key:id", "input"}
    for match in stored.values():
        assert (match.dataset_a_id, match.dataset_b_id) == (v1.pk, v2.pk)
        [(item_a, item_b)] = _pairs(match)
        assert Dataset.objects.get(items__pk=item_a) == v1
        assert Dataset.objects.get(items__pk=item_b) == v2
    # Version 3 is matched with version 2, not version 1.
    with django_capture_on_commit_callbacks(execute=True):
        v3 = dataset_create(project=project, user=owner, file=_jsonl(["c"]), name="qa")
    assert DatasetMatch.objects.filter(dataset_a=v2, dataset_b=v3).count() == 2
    # Safe to run again, and a no-op for a first version or a deleted dataset.
    assert len(dataset_versions_match(dataset_id=v3.pk)) == 2
    assert DatasetMatch.objects.count() == 4
    assert dataset_versions_match(dataset_id=v1.pk) == []
    assert dataset_versions_match_task(dataset_id=10**9) == 0


def test_the_upload_stands_when_the_broker_is_down(
    project, owner, django_capture_on_commit_callbacks, caplog
):
    dataset_create(project=project, user=owner, file=_jsonl(["a"]), name="qa")
    with (
        # The upload sends the task by name (datasets sits below no task module).
        mock.patch(
            "celery.canvas.Signature.apply_async",
            side_effect=ConnectionRefusedError("broker down"),
        ),
        caplog.at_level(logging.ERROR),
        django_capture_on_commit_callbacks(execute=True),
    ):
        v2 = dataset_create(project=project, user=owner, file=_jsonl(["a"]), name="qa")
    assert v2.version == 2 and v2.items.count() == 1
    assert "broker down" in caplog.text
    assert not DatasetMatch.objects.exists()


def test_compare_matches_unmatched_datasets_on_its_first_page_then_reads_it(
    client, viewer, project
):
    v1 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b"]))
    v2 = DatasetFactory(project=project, name="qa", rows=_rows(["b", "a", "z"]))
    yes, no = judged_claims("yes"), judged_claims("no")
    a = make_run(project, dataset=v1, analyses={"faithfulness": [yes, yes]})
    b = make_run(project, dataset=v2, analyses={"faithfulness": [no, yes, yes]})
    login(client, viewer)
    first = client.get(f"/api/runs/{a.pk}/compare/{b.pk}").json()
    assert first["candidates"][0]["match"]["matched"] == 2
    assert DatasetMatch.objects.filter(dataset_a=v1, dataset_b=v2).count() == 1
    again = client.get(f"/api/runs/{a.pk}/compare/{b.pk}").json()
    assert again["pairs"] == first["pairs"]
    assert first["pairs"][0]["regressions"] == 1  # b: 1.0 → 0.0
    # The other direction is its own matching (pairs in its run A's order).
    reverse = client.get(f"/api/runs/{b.pk}/compare/{a.pk}").json()
    assert reverse["pairs"][0]["improvements"] == 1
    assert DatasetMatch.objects.count() == 2


def test_a_rule_that_matches_nothing_is_answered_but_not_stored(
    client, viewer, project
):
    """A key no item has matches nothing: the page says so, and no row is left
    behind for each key a viewer tries."""
    v1 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b"]))
    v2 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b"]))
    a = make_run(
        project, dataset=v1, analyses={"faithfulness": [judged_claims("yes")] * 2}
    )
    b = make_run(
        project, dataset=v2, analyses={"faithfulness": [judged_claims("no")] * 2}
    )
    login(client, viewer)
    for key in ("nope", "missing", "x" * 100):
        data = client.get(
            f"/api/runs/{a.pk}/compare/{b.pk}", {"match": "key", "key": key}
        ).json()
        match = data["candidates"][0]["match"]
        assert (match["matched"], match["only_in_a"], match["no_key_a"]) == (0, 0, 2)
        assert data["pairs"][0]["n"] == 0 and data["items"] == []
    assert not DatasetMatch.objects.exists()
    page = client.get(
        reverse("compare:compare", args=[project.pk]),
        {"a": a.pk, "b": b.pk, "match": "key", "key": "nope"},
    )
    assert page.status_code == 200 and "No item matched" in page.content.decode()
    assert not DatasetMatch.objects.exists()


def _age_stored_matchings() -> None:
    """Make every stored matching older than the window that protects new ones."""
    DatasetMatch.objects.update(created_at=F("created_at") - timedelta(hours=1))


def test_stored_pairs_stay_under_the_projects_cap(project, settings):
    """Past COMPARE_STORED_PAIRS_MAX the project's oldest matchings are dropped,
    except those stored in the last minutes (a compare may be joining on them); a
    compare that needs a dropped one matches again. Other projects keep theirs."""
    settings.COMPARE_STORED_PAIRS_MAX = 5
    v1 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b", "c"]))
    v2 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b", "c"]))
    v3 = DatasetFactory(project=project, name="qa", rows=_rows(["a", "b"]))
    other = DatasetFactory(name="x", rows=_rows(["a"]))
    other2 = DatasetFactory(project=other.project, name="x", rows=_rows(["a"]))
    theirs = dataset_match_get_or_create(
        datasets=(other.pk, other2.pk), spec=MatchSpec()
    )
    first = dataset_match_get_or_create(datasets=(v1.pk, v2.pk), spec=MatchSpec())
    second = dataset_match_get_or_create(datasets=(v2.pk, v3.pk), spec=MatchSpec())
    assert (first.matched, second.matched) == (3, 2)
    # 3 + 2 + 2 > 5, but the first two are minutes old: all three are kept.
    third = dataset_match_get_or_create(datasets=(v1.pk, v3.pk), spec=MatchSpec())
    mine = DatasetMatch.objects.filter(dataset_a__project=project)
    assert set(mine.values_list("pk", flat=True)) == {first.pk, second.pk, third.pk}
    third.delete()
    _age_stored_matchings()
    # Now the oldest that does not fit (v1 ~ v2) goes, with its pairs.
    third = dataset_match_get_or_create(datasets=(v1.pk, v3.pk), spec=MatchSpec())
    assert set(mine.values_list("pk", flat=True)) == {second.pk, third.pk}
    assert (
        DatasetMatchPair.objects.filter(match__dataset_a__project=project).count() == 4
    )
    assert DatasetMatch.objects.filter(pk=theirs.pk).exists()
    # Needed again, it is matched again.
    _age_stored_matchings()
    again = dataset_match_get_or_create(datasets=(v1.pk, v2.pk), spec=MatchSpec())
    assert again.pk != first.pk and _pairs(again) == _pairs_of_keys(v1, v2, 3)
    # 3 more: the newest older one (v1 ~ v3, 2 pairs) fits beside it, v2 ~ v3 not.
    assert set(mine.values_list("pk", flat=True)) == {third.pk, again.pk}
    # A matching larger than the cap is still stored; every older one goes.
    settings.COMPARE_STORED_PAIRS_MAX = 1
    _age_stored_matchings()
    big = dataset_match_get_or_create(datasets=(v2.pk, v1.pk), spec=MatchSpec())
    assert big.pk and big.pairs.count() == 3
    assert list(mine.values_list("pk", flat=True)) == [big.pk]
    assert DatasetMatch.objects.filter(pk=theirs.pk).exists()


def _pairs_of_keys(a: Dataset, b: Dataset, n: int) -> list[tuple[int, int]]:
    """(a's item, b's item) for the first n items, matched by position (same keys)."""
    a_ids = list(a.items.order_by("index").values_list("pk", flat=True))[:n]
    b_ids = list(b.items.order_by("index").values_list("pk", flat=True))[:n]
    return sorted(zip(a_ids, b_ids, strict=True))
