"""The database-backed judge cache the workers share."""

from __future__ import annotations

import pytest

from evalsite.evals.engine.judge_cache import DbJudgeCache
from evalsite.evals.models import JudgeCacheEntry

pytestmark = pytest.mark.django_db


def test_cache_returns_what_was_stored_and_none_for_a_miss():
    cache = DbJudgeCache(project_id=1)
    value = {"raw": '{"verdict": "yes"}', "usage": {"prompt_tokens": 12}}
    assert cache.get("k1") is None
    cache.set("k1", value)
    assert cache.get("k1") == value
    assert JudgeCacheEntry.objects.get().value == value  # stored as JSON


def test_an_identical_call_stored_twice_keeps_the_first_reply():
    cache = DbJudgeCache(project_id=1)
    cache.set("k2", {"raw": "first"})
    cache.set("k2", {"raw": "second"})  # a concurrent worker's identical call
    assert cache.get("k2") == {"raw": "first"}
    assert JudgeCacheEntry.objects.count() == 1


def test_one_projects_cached_reply_never_answers_another_project():
    mine, theirs = DbJudgeCache(project_id=1), DbJudgeCache(project_id=2)
    mine.set("same-call", {"raw": "paid for by project 1"})
    assert mine.get("same-call") == {"raw": "paid for by project 1"}
    # Project 2 neither gets the reply nor can tell that the text was judged before.
    assert theirs.get("same-call") is None
    theirs.set("same-call", {"raw": "paid for by project 2"})
    assert mine.get("same-call") == {"raw": "paid for by project 1"}
    assert theirs.get("same-call") == {"raw": "paid for by project 2"}
    assert JudgeCacheEntry.objects.count() == 2
