"""Health of what every page and run needs: the database, the broker and the cache.

Each check either returns or raises; `health_check` turns that into "ok" or the
exception's class name, never its message, which may hold a host, user or URL.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from django.core.cache import cache
from django.db import connection

logger = logging.getLogger(__name__)

# A probe that waits longer than this for one dependency calls it down.
TIMEOUT_SECONDS = 3


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker() -> None:
    from evalsite.celery import app

    with app.connection_for_write(connect_timeout=TIMEOUT_SECONDS) as conn:
        conn.connect()


def _cache() -> None:
    # A key of its own, so concurrent probes never read each other's value.
    key = f"healthz:{uuid.uuid4().hex}"
    cache.set(key, "ok", timeout=60)
    try:
        if cache.get(key) != "ok":
            raise LookupError("the cache lost a value just stored")
    finally:
        cache.delete(key)


CHECKS: dict[str, Callable[[], None]] = {
    "database": _database,
    "broker": _broker,
    "cache": _cache,
}


def health_check() -> dict[str, str]:
    """Run every check; map its name to "ok" or "error: <exception class>"."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            check()
        # Any failure means "down", whatever the driver raises (psycopg, redis, kombu,
        # socket errors): the probe reports it rather than answering 500.
        except Exception as exc:
            logger.warning("health check %s failed: %s", name, type(exc).__name__)
            results[name] = f"error: {type(exc).__name__}"
        else:
            results[name] = "ok"
    return results
