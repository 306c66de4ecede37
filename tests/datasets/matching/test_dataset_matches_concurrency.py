"""Two first compares of the same datasets at the same moment (on Postgres, where
they really overlap): both match, one matching is stored with its pairs once, and
both requests answer with it."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from evalsite.datasets.matching import services as dataset_matches
from evalsite.datasets.matching.selectors import MatchSpec
from evalsite.datasets.models import DatasetMatch, DatasetMatchPair
from tests.factories import DatasetFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="overlapping writers need Postgres; SQLite serialises them",
    ),
]


def test_two_first_compares_at_once_store_one_matching(project, monkeypatch):
    rows = [
        {"input": f"q{i}", "output": "a", "metadata": {"id": f"k{i}"}}
        for i in range(50)
    ]
    v1 = DatasetFactory(project=project, name="qa", rows=rows)
    v2 = DatasetFactory(project=project, name="qa", rows=rows[::-1])
    # Both requests pass the "not stored yet" check before either stores: each
    # waits for the other at the barrier, right after counting.
    barrier = threading.Barrier(2, timeout=30)
    counts = dataset_matches.pair_match_counts

    def counted_then_wait(**kwargs):
        result = counts(**kwargs)
        barrier.wait()
        return result

    monkeypatch.setattr(dataset_matches, "pair_match_counts", counted_then_wait)
    answers: list[int] = []
    errors: list[BaseException] = []

    def first_compare() -> None:
        try:
            match = dataset_matches.dataset_match_get_or_create(
                datasets=(v1.pk, v2.pk), spec=MatchSpec()
            )
            answers.append(match.pk)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first_compare) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert len(answers) == 2 and answers[0] == answers[1]
    assert DatasetMatch.objects.count() == 1
    assert DatasetMatchPair.objects.count() == 50
