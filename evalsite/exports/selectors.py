"""Reads for exports: the metadata key set of a dataset, the reviewers of a run and
what reviewers added to a chunk of results (access goes through the owning apps'
`run_get_for_user` and `dataset_get_for_user`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Exists, Q, Sum
from django.db.models.expressions import RawSQL

from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import Comment, JudgeCall, Override, Run
from evalsite.review.models import QueueEntry, Review


def dataset_metadata_keys(*, dataset: Dataset) -> list[str]:
    """Every top-level metadata key used by any item of the dataset, in a stable order.

    Keys come from one DISTINCT query in the database (jsonb_object_keys on Postgres,
    json_each on SQLite) so a 100k-item dataset costs one scan, not 100k Python dicts.
    Order: the file's column order where the key was a column, then the rest sorted.
    """
    table = Item._meta.db_table
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT DISTINCT k FROM (SELECT jsonb_object_keys(metadata) AS k FROM {table}"
            " WHERE dataset_id = %s AND jsonb_typeof(metadata) = 'object') AS keys"
        )
    elif connection.vendor == "sqlite":
        sql = (
            f"SELECT DISTINCT j.key FROM {table}, json_each({table}.metadata) AS j"
            f" WHERE {table}.dataset_id = %s AND json_type({table}.metadata) = 'object'"
        )
    else:  # pragma: no cover - only Postgres and SQLite are supported
        keys: set[str] = set()
        for meta in (
            Item.objects.filter(dataset=dataset)
            .values_list("metadata", flat=True)
            .iterator(chunk_size=2000)
        ):
            if isinstance(meta, dict):
                keys.update(meta)
        return _order_keys(keys, dataset.columns)
    with connection.cursor() as cursor:
        cursor.execute(sql, [dataset.pk])
        found = {row[0] for row in cursor.fetchall()}
    return _order_keys(found, dataset.columns)


def _order_keys(keys: set[str], columns: list[Any] | None) -> list[str]:
    position = {
        name: i for i, name in enumerate(columns or []) if isinstance(name, str)
    }
    return sorted(keys, key=lambda k: (position.get(k, len(position)), k))


# ------------------------------------------------------------------ run exports


def run_answer_reviewers(*, run: Run) -> list[str]:
    """Usernames of everyone who answered on any result of the run (one column group
    each in CSV and Parquet), sorted. Whole run, like the metadata keys, so filtered
    and whole-run exports of one run have the same columns."""
    return sorted(
        Review.objects.filter(
            result__run=run, kind=Review.Kind.ANSWER, reviewer__isnull=False
        )
        .order_by()
        .values_list("reviewer__username", flat=True)
        .distinct()
    )


@dataclass(frozen=True)
class RunExtras:
    """Which kinds of additions a run has at all: an export skips the per-chunk query
    of a kind the run has none of (most runs have no comments or queue answers)."""

    notes: bool = True
    comments: bool = True
    reviews: bool = True
    calls: bool = True


def run_extras_present(*, run: Run) -> RunExtras:
    """One query: whether any result of the run has an override note, a comment, a
    queue entry or review, a judge call."""
    found = (
        Run.objects.filter(pk=run.pk)
        .annotate(
            has_notes=Exists(
                Override.objects.filter(
                    result__run_id=run.pk, reverted_at__isnull=True
                ).exclude(note="")
            ),
            has_comments=Exists(Comment.objects.filter(result__run_id=run.pk)),
            has_entries=Exists(QueueEntry.objects.filter(result__run_id=run.pk)),
            has_reviews=Exists(Review.objects.filter(result__run_id=run.pk)),
            has_calls=Exists(JudgeCall.objects.filter(result__run_id=run.pk)),
        )
        .values("has_notes", "has_comments", "has_entries", "has_reviews", "has_calls")
        .get()
    )
    return RunExtras(
        notes=found["has_notes"],
        comments=found["has_comments"],
        reviews=found["has_entries"] or found["has_reviews"],
        calls=found["has_calls"],
    )


def _among(ids: list[int]) -> Any:
    """`ids` as the right side of an `__in` lookup. On Postgres one array parameter:
    building, sending and parsing an IN list of 2,000 placeholders costs more than the
    query it belongs to."""
    if connection.vendor == "postgresql":
        # As array text: psycopg's list dumper is Python, a str join is not.
        literal = "{" + ",".join(map(str, ids)) + "}"
        return RawSQL("SELECT unnest(%s::bigint[])", [literal])
    return ids


@dataclass
class Usage:
    """A result's judge calls, summed: cost is priced on the calls that were not
    answered from the cache (a cache hit carries the first call's usage, but costs
    nothing)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float | None = None  # the judge's own time
    wait_ms: float | None = None  # waiting for a limiter slot, the cache, back-off
    paid_prompt_tokens: int = 0
    paid_completion_tokens: int = 0


@dataclass
class Entry:
    """A result's entry in an overlap queue (the one that counts when it has several:
    decided, else waiting for adjudication, else open; the latest queue first)."""

    queue_id: int
    state: str
    decision: dict[str, Any]
    decided_at: datetime | None


@dataclass
class BatchExtras:
    """What reviewers added to one chunk of results, keyed by result id."""

    notes: dict[int, list[str]] = field(default_factory=dict)
    usernames: dict[int, str] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    answers: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    adjudications: dict[int, dict[str, Any]] = field(default_factory=dict)
    entries: dict[int, Entry] = field(default_factory=dict)
    review_seconds: dict[int, float] = field(default_factory=dict)
    usage: dict[int, Usage] = field(default_factory=dict)


_STATE_RANK: dict[str, int] = {
    QueueEntry.State.DECIDED: 2,
    QueueEntry.State.ADJUDICATE: 1,
    QueueEntry.State.OPEN: 0,
}


def result_batch_extras(
    *,
    result_ids: list[int],
    reviewer_ids: set[int],
    user_id: int | None,
    present: RunExtras = RunExtras(),  # noqa: B008 - frozen, never mutated
) -> BatchExtras:
    """Overrides' notes, reviewer names, comments, queue answers, adjudications, queue
    entries and judge usage of these results: at most six queries whatever their
    number (the export calls this once per chunk of 2,000, never per result), fewer
    when the run has none of a kind (`present`).

    Blind review as in the reviews API (`answers_visible`): an answer on an entry of an
    overlap queue still taking answers is left out unless `user_id` answered that entry
    too. Answers of single-review queues are applied at once (they are the result's
    review) and always shown. Review time counts every review, hidden or not: it says
    how long, not what.
    """
    extras = BatchExtras()
    user_model = get_user_model()
    among = _among(result_ids)

    for result_id, note in (
        Override.objects.filter(result_id__in=among, reverted_at__isnull=True)
        .exclude(note="")
        .order_by("created_at", "id")
        .values_list("result_id", "note")
        if present.notes
        else ()
    ):
        extras.notes.setdefault(result_id, []).append(note)

    if reviewer_ids:
        extras.usernames = {
            u.pk: u.get_username()
            for u in user_model.objects.filter(pk__in=reviewer_ids)
        }

    for result_id, author, created_at, body in (
        Comment.objects.filter(result_id__in=among)
        .order_by("created_at", "id")
        .values_list("result_id", "user__username", "created_at", "body")
        if present.comments
        else ()
    ):
        extras.comments.setdefault(result_id, []).append(
            {"author": author, "created_at": created_at, "body": body}
        )

    entries: dict[tuple[int, int], tuple[int, str, dict[str, Any], Any]] = {}
    for result_id, queue_id, overlap, state, decision, decided_at in (
        QueueEntry.objects.filter(result_id__in=among)
        .order_by()
        .values_list(
            "result_id",
            "queue_id",
            "queue__overlap",
            "state",
            "decision",
            "decided_at",
        )
        if present.reviews
        else ()
    ):
        entries[(result_id, queue_id)] = (overlap, state, decision, decided_at)
        if overlap < 2:
            continue
        current = extras.entries.get(result_id)
        rank = (_STATE_RANK.get(state, 0), queue_id)
        if current is None or rank > (
            _STATE_RANK.get(current.state, 0),
            current.queue_id,
        ):
            extras.entries[result_id] = Entry(
                queue_id,
                state,
                decision if isinstance(decision, dict) else {},
                decided_at,
            )

    reviews = (
        []
        if not present.reviews
        else list(
            Review.objects.filter(result_id__in=among)
            .order_by("created_at", "id")
            .values_list(
                "result_id",
                "queue_id",
                "queue__name",
                "kind",
                "reviewer_id",
                "reviewer__username",
                "passed",
                "score",
                "flips",
                "note",
                "seconds",
                "created_at",
            )
        )
    )
    answered_by_user = {
        (r[0], r[1])
        for r in reviews
        if user_id is not None and r[4] == user_id and r[3] == Review.Kind.ANSWER
    }
    for (
        result_id,
        queue_id,
        queue_name,
        kind,
        _reviewer_id,
        username,
        passed,
        score,
        flips,
        note,
        seconds,
        created_at,
    ) in reviews:
        if seconds is not None:
            extras.review_seconds[result_id] = (
                extras.review_seconds.get(result_id, 0.0) + seconds
            )
        if kind == Review.Kind.ADJUDICATION:
            # The latest adjudication wins (ordered by time).
            extras.adjudications[result_id] = {
                "adjudicator": username,
                "passed": passed,
                "score": score,
                "note": note,
                "created_at": created_at,
            }
            continue
        overlap, state, _decision, _decided_at = entries.get(
            (result_id, queue_id), (1, QueueEntry.State.OPEN, {}, None)
        )
        visible = (
            overlap < 2
            or state != QueueEntry.State.OPEN
            or (result_id, queue_id) in answered_by_user
        )
        if not visible:
            continue
        extras.answers.setdefault(result_id, []).append(
            {
                "reviewer": username,
                "queue_id": queue_id,
                "queue": queue_name,
                "passed": passed,
                "score": score,
                "flips": flips if isinstance(flips, dict) else {},
                "note": note,
                "seconds": seconds,
                "created_at": created_at.isoformat() if created_at else None,
            }
        )

    for (
        result_id,
        calls,
        cache_hits,
        prompt,
        completion,
        latency,
        wait,
        paid_prompt,
        paid_completion,
    ) in (
        JudgeCall.objects.filter(result_id__in=among)
        .order_by()
        .values("result_id")
        .annotate(
            calls=Count("id"),
            cache_hits=Count("id", filter=Q(cache_hit=True)),
            prompt=Sum("prompt_tokens"),
            completion=Sum("completion_tokens"),
            latency=Sum("latency_ms"),
            wait=Sum("wait_ms"),
            paid_prompt=Sum("prompt_tokens", filter=Q(cache_hit=False)),
            paid_completion=Sum("completion_tokens", filter=Q(cache_hit=False)),
        )
        .values_list(
            "result_id",
            "calls",
            "cache_hits",
            "prompt",
            "completion",
            "latency",
            "wait",
            "paid_prompt",
            "paid_completion",
        )
        if present.calls
        else ()
    ):
        extras.usage[result_id] = Usage(
            calls=calls,
            cache_hits=cache_hits,
            prompt_tokens=prompt or 0,
            completion_tokens=completion or 0,
            latency_ms=latency,
            wait_ms=wait,
            paid_prompt_tokens=paid_prompt or 0,
            paid_completion_tokens=paid_completion or 0,
        )
    return extras
