"""Test settings: the app's settings, plus fast hashing and eager Celery for unit tests.

Integration tests (marker `integration`) start a real worker process on the real broker.
"""

from __future__ import annotations

from evalsite.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
RATELIMIT_ENABLE = True

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not :memory:, so a real worker process in integration tests sees the same data.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}  # noqa: F405

# The login rate limit counts in the cache: a per-process cache, emptied before each test
# (tests/conftest.py), keeps one test's logins from blocking the next one's.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# The tests' judges (offline judge servers, scripted endpoints) listen on loopback, and
# pytest-django runs with DEBUG off, which refuses loopback to judges; the SSRF tests
# set this back to [] to see the shipped policy.
JUDGE_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1", "localhost"]
