"""The cache backend with Redis (evalsite.lib.cache): Django's, less a redis-py client
built for every call."""

from __future__ import annotations

import os

import pytest

from evalsite.lib.cache import RedisCache

REDIS_URL = os.environ.get("REDIS_URL", "")


@pytest.mark.skipif(not REDIS_URL, reason="needs REDIS_URL")
def test_the_redis_cache_reuses_one_client_and_still_caches():
    cache = RedisCache(REDIS_URL, {"KEY_PREFIX": "test-cache-backend"})
    first = cache._cache.get_client(write=True)
    assert cache._cache.get_client(write=False) is first
    cache.set("answer", {"n": 42}, timeout=30)
    assert cache.get("answer") == {"n": 42}
    cache.delete("answer")
    assert cache.get("answer") is None
