"""The database-backed judge cache the workers share."""

from __future__ import annotations

import pytest

from evalsite.evals.models import JudgeCacheEntry
from evalsite.evals.services.execution import DbJudgeCache

pytestmark = pytest.mark.django_db


def test_cache_returns_what_was_stored_and_none_for_a_miss():
    cache = DbJudgeCache()
    value = {"raw": '{"verdict": "yes"}', "usage": {"prompt_tokens": 12}}
    assert cache.get("k1") is None
    cache.set("k1", value)
    assert cache.get("k1") == value
    assert JudgeCacheEntry.objects.get(key="k1").value == value  # stored as JSON


def test_an_identical_call_stored_twice_keeps_the_first_reply():
    cache = DbJudgeCache()
    cache.set("k2", {"raw": "first"})
    cache.set("k2", {"raw": "second"})  # a concurrent worker's identical call
    assert cache.get("k2") == {"raw": "first"}
    assert JudgeCacheEntry.objects.filter(key="k2").count() == 1
