"""The evals queries written as plain SQL; everything else goes through the ORM.

Each one is here because a profile said so, not for style. Figures: py-spy profiles of
a worker under the run benchmark (`python -m bench bench_runs`: two cores, Postgres,
Redis, offline judge at 100 ms); README "What lifted run throughput".
- The judge cache's lookup and store, two per judge step: building the two queries
  through the ORM took 14 % of a worker's CPU, more than sending them.
- A result's judge calls in one INSERT: Django's bulk_create sends several rows to
  Postgres as arrays, and psycopg builds those arrays in Python; that took 5 % of a
  worker's CPU, more per result than the whole rest of the write (prompts are large).
With both (and the offline judge's latency fix that followed) a run alone went from
67-74 % to 79-88 % of the ideal throughput.

Keep them plain: placeholders only (never a value in the SQL text), table and column
names from the models' _meta, and SQL both Postgres and SQLite accept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from evalsite.evals.models import JudgeCacheEntry, JudgeCall
from evalsite.lib.db import column_name
from scoring import StepRecord

_CACHE_TABLE = JudgeCacheEntry._meta.db_table
_CACHE_GET = f'SELECT "value" FROM "{_CACHE_TABLE}" WHERE "key" = %s'
# A concurrent identical call may have stored it first: keep that one. One statement,
# so in autocommit it is one round trip and inside a transaction (tests) a conflict
# leaves the transaction usable.
_CACHE_SET = (
    f'INSERT INTO "{_CACHE_TABLE}" ("key", "value", "created_at") '
    'VALUES (%s, %s, %s) ON CONFLICT ("key") DO NOTHING'
)


def judge_cache_get(*, key: str) -> dict[str, Any] | None:
    """The cached reply stored under `key` (already scoped by the caller), or None."""
    with connection.cursor() as cursor:
        cursor.execute(_CACHE_GET, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    value = row[0]
    # Django loads jsonb as text on Postgres (and SQLite has no JSON type).
    cached: dict[str, Any] = (
        json.loads(value) if isinstance(value, (str, bytes)) else value
    )
    return cached


def judge_cache_get_many(*, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """judge_cache_get of several keys in one query (a dispatcher's lookups of the last
    few milliseconds): {key: value} of those found."""
    if not keys:
        return {}
    placeholders = ", ".join(["%s"] * len(keys))
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT "key", "value" FROM "{_CACHE_TABLE}" WHERE "key" IN ({placeholders})',
            list(keys),
        )
        rows = cursor.fetchall()
    return {
        key: json.loads(value) if isinstance(value, (str, bytes)) else value
        for key, value in rows
    }


def judge_cache_set_many(
    *, entries: Sequence[tuple[str, dict[str, Any]]], now: datetime
) -> None:
    """judge_cache_set of several entries in one statement."""
    if not entries:
        return
    rows = ", ".join(["(%s, %s, %s)"] * len(entries))
    params: list[Any] = []
    for key, value in entries:
        params += [key, json.dumps(value), now]
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{_CACHE_TABLE}" ("key", "value", "created_at") '
            f'VALUES {rows} ON CONFLICT ("key") DO NOTHING',
            params,
        )


def judge_cache_set(*, key: str, value: dict[str, Any], now: datetime) -> None:
    """Store `value` under `key` unless a row with that key exists."""
    with connection.cursor() as cursor:
        cursor.execute(_CACHE_SET, [key, json.dumps(value), now])


_CALL_FIELDS = (
    "result_id",
    "step",
    "messages",
    "raw_response",
    "response_format",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "wait_ms",
    "attempts",
    "cache_hit",
    "error",
    "error_body",
    "created_at",
)
_CALL_INSERT = 'INSERT INTO "{table}" ({columns}) VALUES '.format(
    table=JudgeCall._meta.db_table,
    columns=", ".join(f'"{column_name(JudgeCall, f)}"' for f in _CALL_FIELDS),
)
_CALL_ROW = "(" + ", ".join(["%s"] * len(_CALL_FIELDS)) + ")"


def judge_calls_insert(
    *, result_id: int, steps: Sequence[StepRecord], now: datetime
) -> None:
    """Insert a result's judge calls in one statement (nothing when `steps` is empty)."""
    if not steps:
        return
    params: list[Any] = []
    for step in steps:
        usage = step.usage or {}
        params += [
            result_id,
            step.name[:40],
            json.dumps(step.messages or []),
            step.raw or "",
            (step.response_format or "")[:16],
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            float(step.latency_ms or 0),
            float(step.wait_ms or 0),
            max(1, int(step.attempts or 1)),
            bool(step.cached),
            step.error or "",
            step.error_body or "",
            now,
        ]
    with connection.cursor() as cursor:
        cursor.execute(_CALL_INSERT + ", ".join([_CALL_ROW] * len(steps)), params)
