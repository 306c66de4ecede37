"""A million results as a user meets them, section "million".

Builds, by bulk load (COPY through psycopg 3's `cursor.copy`, no ORM saves), a
200k-item dataset, a 1M-result run on it (5 LLM scorers, each result with a realistic
analysis: claims and per-claim verdicts with reasons, 0.4-1.5 KB) and a second 1M-result
run of the same dataset (for compare; copied from the first server-side, 10 % of the
scores changed), plus an overlap-3 queue of 50,000 results on the first run (49,900
decided with three answers each, 100 open with two). All of it lives in its own
database, `<name>_million` beside the bench's scratch database, built once and reused
(a reused build costs a count; a new one a few minutes).

Then times, with the Django test client and logged-in members, the app's own server
time (the Server-Timing header) of what a user touches: the run page, the explorer
(first page, each filter, text search, a page in the middle of the run and the
last page by keyset, for the explorer and the API), the results matrix (items ×
scorers: first page, filters, search, the middle and last pages by keyset), the
item page, an override with its recomputed aggregates, a third answer in the overlap-3
queue (the majority applied), the agreement page of the run (the 50k-item queue;
cached, and right after an answer: the latest figures marked while the background
recount, timed too, runs),
compare of the two runs (first page cold, i.e. nothing cached, and right after a
review of one scorer: the rows at once, the figures counted by a background task
whose time and "figures on screen" are reported too; and cached), CSV and Parquet
export (each in
its own process: wall time, CPU time and that process's peak RSS, the kernel's VmHWM
reset when the request starts), and the upload
of a 200k-row CSV (`dataset_create`, as the upload view runs it).

Needs Postgres (skipped on SQLite). Run alone: `python -m bench bench_million`;
`BENCH_MILLION_PARTS=compare` (comma-separated names of PARTS) times only those
phases (the queue is built only for "pages" and "writes").
Targets: ingest of 200k rows ≤ 60 s; pages p95 ≤ 300 ms; override and answer p95
≤ 50 ms; compare first page p95 ≤ 500 ms; CSV export of 1M ≤ 90 s, Parquet ≤ 60 s,
each with the exporting process's peak RSS ≤ 200 MB.
"""

from __future__ import annotations

import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._common import (
    PeakRss,
    allow_testserver,
    latency_rows,
    rss_bytes,
    server_ms,
    time_get,
)

SECTION = "million"
N_ITEMS = 200_000
KINDS_USED = (
    "faithfulness",
    "hallucination",
    "answer_relevancy",
    "context_relevance",
    "factuality",
)
N_RESULTS = N_ITEMS * len(KINDS_USED)
QUEUE_SIZE = 50_000
OPEN_ENTRIES = 100
OVERLAP = 3
REPEAT = 20
# Each a recount of the 50k-item queue's 150k answers: seconds, not milliseconds.
AGREEMENT_REPEAT = 5
WRITE_REPEAT = 30
PAGE_TARGET_MS = 300.0
WRITE_TARGET_MS = 50.0
COMPARE_TARGET_MS = 500.0
COMPARE_REPEAT = 10
# The compare page's poll interval while the figures are counted (compare.html).
POLL_MS = 1000.0
# The phases, in order; BENCH_MILLION_PARTS=compare,exports runs only those.
PARTS = ("pages", "compare", "writes", "exports", "ingest")
INGEST_ROWS = 200_000
INGEST_TARGET_S = 60.0
CSV_TARGET_S = 90.0
PARQUET_TARGET_S = 60.0
EXPORT_TARGET_MB = 200.0
DATASET_NAME = "million-200k"
RUN_A = "million A"
RUN_B = "million B"
QUEUE_NAME = "million overlap 3"
# Every 20th ok result was accepted by the reviewer (reviewed, no override), every
# 10th item assigned to them: a run part-way through review.
ACCEPTED_EVERY = 20
ASSIGNED_EVERY = 10
ERROR_EVERY = 97
VARIANTS = 512  # analyses drawn per scorer kind; rows pick one by a hash of their key


# Its own database ------------------------------------------------------------------


@contextmanager
def own_database(suffix: str) -> Iterator[None]:
    """Point Django's default connection at `<current name>_<suffix>` (created and
    migrated if needed) for the block, then back. The cache is cleared on the way in
    and out: its keys hold ids, which another database reuses."""
    import psycopg
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connections

    conn = connections["default"]
    previous = conn.settings_dict["NAME"]
    name = f"{previous}_{suffix}"
    params = conn.get_connection_params()
    params.pop("dbname", None)
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
        found = admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not found:
            admin.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    conn.settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0, interactive=False)
        cache.clear()
        yield
    finally:
        cache.clear()
        conn.close()
        conn.settings_dict["NAME"] = previous


# COPY ---------------------------------------------------------------------------------


def copy_text(value: Any) -> str:
    """One value in COPY's text format."""
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        text = json.dumps(value)
    elif isinstance(value, datetime):
        text = value.isoformat()
    else:
        text = str(value)
    return (
        text.replace("\\", "\\\\")
        .replace("\t", "\\t")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )


def copy_load(
    model: Any,
    varying: Sequence[str],
    rows: Iterable[Sequence[str]],
    fixed: dict[str, Any] | None = None,
) -> None:
    """COPY rows into model's table. Each row gives the `varying` columns (database
    column names) already in COPY text; every other column takes `fixed[column]`,
    else now for auto_now fields, else the field's default; columns with a database
    default and no fixed value are left to the database, the primary key too."""
    from django.db import connection
    from django.db.models import NOT_PROVIDED
    from django.utils import timezone

    fixed = fixed or {}
    now = timezone.now()
    const_cols: list[str] = []
    consts: list[str] = []
    for f in model._meta.concrete_fields:
        if f.primary_key or f.column in varying:
            continue
        if f.column in fixed:
            value = fixed[f.column]
        elif getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            value = now
        elif f.db_default is not NOT_PROVIDED:
            continue
        elif f.has_default() or f.null or f.empty_strings_allowed:
            # The default, else None (nullable) or "" (a blank text field).
            value = f.get_default()
        else:
            raise ValueError(f"{model.__name__}.{f.name} needs a value")
        const_cols.append(f.column)
        consts.append(copy_text(value))
    suffix = ("\t" + "\t".join(consts) if consts else "") + "\n"
    columns = ", ".join(f'"{c}"' for c in [*varying, *const_cols])
    table = model._meta.db_table
    sql = f'COPY "{table}" ({columns}) FROM STDIN'
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        buffer: list[str] = []
        for row in rows:
            buffer.append("\t".join(row) + suffix)
            if len(buffer) >= 10_000:
                copy.write("".join(buffer))
                buffer = []
        if buffer:
            copy.write("".join(buffer))


# The data -------------------------------------------------------------------------------

_TOPICS = ["pricing", "sync", "export", "security", "api", "billing", "storage"]


def _item_row(i: int) -> list[str]:
    topic = _TOPICS[i % len(_TOPICS)]
    n = i % 97
    return [
        str(i),
        copy_text(
            f"Customer {i} asks: how does {topic} work on the Plus plan, and is "
            f"there a limit of {n} per month?"
        ),
        copy_text(
            f"On Plus, {topic} is included. The limit is {n} per month; above that, "
            f"requests are queued and processed the next day."
        ),
        copy_text(
            [
                f"Plus includes {topic} for every workspace member.",
                f"The monthly {topic} limit on Plus is {n}; extra requests are queued.",
                f"Usage is shown in Settings > {topic.title()}.",
            ]
        ),
        copy_text(f"{topic.title()} is included in Plus with a limit of {n} a month."),
        copy_text({"topic": topic, "ticket": f"T-{100000 + i}"}),
    ]


def _analysis(kind: str, rng: random.Random) -> dict[str, Any]:
    from bench.bench_review import _analysis as review_analysis

    if kind == "answer_relevancy":
        n = rng.randint(1, 8)
        statements = [
            f"Statement {i}: the Plus plan includes the feature asked about."
            for i in range(n)
        ]
        return {
            "statements": statements,
            "verdicts": [
                {
                    "statement": s,
                    "verdict": rng.choice(["yes", "yes", "unsure", "no"]),
                    "reason": "It addresses the limit the customer asked about.",
                }
                for s in statements
            ],
        }
    return review_analysis(kind, rng)


class _Variant:
    """A drawn analysis and what the scorer makes of it, in COPY text."""

    def __init__(self, kind: str, options: Any, rng: random.Random) -> None:
        from scoring import compute_score, overridable_count, passes

        analysis = _analysis(kind, rng)
        score = compute_score(kind, analysis, options)
        passed = passes(kind, score, options)
        self.analysis = copy_text(analysis)
        self.score = copy_text(score)
        self.passed = copy_text(passed)
        self.overridable = str(overridable_count(kind, analysis))


RESULT_COLUMNS = (
    "item_id",
    "run_scorer_id",
    "status",
    "error",
    "analysis",
    "final_analysis",
    "judge_score",
    "final_score",
    "judge_passed",
    "final_passed",
    "overridable_count",
    "reason",
    "reviewed",
    "human_passed",
    "reviewed_by_id",
    "reviewed_at",
    "assignee_id",
)


def _result_rows(
    item_ids: list[int], scorers: list[Any], user_id: int, now: str
) -> Iterator[list[str]]:
    rng = random.Random(1_000_000)
    variants = {
        rs.pk: [_Variant(rs.kind, rs.options, rng) for _ in range(VARIANTS)]
        for rs in scorers
    }
    null, t, f = r"\N", "t", "f"
    reason = "Most claims are supported by the context; one is not mentioned."
    user = str(user_id)
    for n, item_id in enumerate(item_ids):
        item = str(item_id)
        assignee = user if n % ASSIGNED_EVERY == 0 else null
        for rs in scorers:
            if n % ERROR_EVERY == rs.position:
                yield (
                    [item, str(rs.pk), "error", "judge timed out"]
                    + [null] * 6
                    + [
                        "0",
                        "",
                        f,
                        null,
                        null,
                        null,
                        assignee,
                    ]
                )
                continue
            v = variants[rs.pk][(n * 7 + rs.position * 13) % VARIANTS]
            accepted = n % ACCEPTED_EVERY == rs.position
            yield [
                item,
                str(rs.pk),
                "ok",
                "",
                v.analysis,
                v.analysis,
                v.score,
                v.score,
                v.passed,
                v.passed,
                v.overridable,
                reason,
                t if accepted else f,
                v.passed if accepted else null,
                user if accepted else null,
                now if accepted else null,
                assignee,
            ]


@contextmanager
def indexes_rebuilt(*tables: str) -> Iterator[None]:
    """Drop the tables' secondary indexes for the block and build them again after
    it, in the caller's transaction: one sorted build per index is several times
    cheaper than updating every index (a trigram GIN above all) row by row during a
    COPY. Indexes behind constraints (primary key, unique) stay. Only for the bench's
    own database: foreign keys are not checked inside the block (triggers off)."""
    from django.db import connection

    with connection.cursor() as cursor:
        # No foreign key checks for the load: the rows reference the ids the same
        # load inserted, and a check per row (a deferred trigger each) cost minutes.
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = "
            "current_schema() AND tablename = ANY(%s) AND indexname NOT IN "
            "(SELECT conname FROM pg_constraint)",
            [list(tables)],
        )
        definitions = cursor.fetchall()
        for name, _ in definitions:
            cursor.execute(f'DROP INDEX "{name}"')
    yield
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = origin")
        # Checks left pending from before the block (the deletes of an older
        # build) would refuse an index build on their table: run them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # Each build sorts in memory rather than in temporary files.
        cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
        for _, definition in definitions:
            cursor.execute(definition)


def _vacuum(*tables: str) -> None:
    """VACUUM ANALYZE: planner statistics and a visibility map (index-only scans), as
    autovacuum gives a table in use."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f'VACUUM ANALYZE "{table}"')


def _build() -> tuple[Any, Any, Any]:
    """(reviewer, run A, run B): reused when both runs hold all their results."""
    from django.db import connection, transaction

    from bench._common import bench_member
    from evalsite.accounts.models import Role
    from evalsite.datasets.models import Dataset
    from evalsite.evals.models import Run

    user, project = bench_member("bench-million", Role.REVIEWER)
    found = {
        r.name: r for r in Run.objects.filter(project=project, name__in=(RUN_A, RUN_B))
    }
    if len(found) == 2 and all(r.status == "done" for r in found.values()):
        return user, found[RUN_A], found[RUN_B]
    with transaction.atomic():
        # A raw DELETE: the ORM's cascade would load a million results first.
        with connection.cursor() as cursor:
            for sql in (
                "DELETE FROM review_review WHERE queue_id IN (SELECT id FROM "
                "review_reviewqueue WHERE project_id = %s)",
                "DELETE FROM review_queueentry WHERE queue_id IN (SELECT id FROM "
                "review_reviewqueue WHERE project_id = %s)",
                "DELETE FROM review_reviewqueue WHERE project_id = %s",
                "DELETE FROM review_override WHERE result_id IN (SELECT r.id FROM "
                "evals_result r JOIN evals_run u ON u.id = r.run_id "
                "WHERE u.project_id = %s)",
                "DELETE FROM evals_result WHERE run_id IN (SELECT id FROM evals_run "
                "WHERE project_id = %s)",
                "DELETE FROM datasets_item WHERE dataset_id IN (SELECT id FROM "
                "datasets_dataset WHERE project_id = %s)",
            ):
                cursor.execute(sql, [project.pk])
        Run.objects.filter(project=project).delete()
        Dataset.objects.filter(project=project).delete()
        with indexes_rebuilt("datasets_item", "evals_result"):
            run_a, run_b = _load(project, user)
        Run.objects.filter(pk__in=[run_a.pk, run_b.pk]).update(status="done")
    _vacuum("datasets_item", "evals_result")
    run_a.refresh_from_db()
    run_b.refresh_from_db()
    return user, run_a, run_b


def _load(project: Any, user: Any) -> tuple[Any, Any]:
    """The dataset's items and both runs' results, bulk loaded."""
    from django.utils import timezone

    from evalsite.datasets.models import Dataset, Item
    from evalsite.evals.models import Result, Run, RunScorer
    from scoring import KINDS, validate_options

    dataset = Dataset.objects.create(
        project=project,
        name=DATASET_NAME,
        item_count=N_ITEMS,
        file_format="csv",
        columns=["input", "output", "context", "reference", "topic", "ticket"],
    )
    copy_load(
        Item,
        ("index", "input", "output", "context", "reference", "metadata"),
        (_item_row(i) for i in range(N_ITEMS)),
        {"dataset_id": dataset.pk},
    )
    item_ids = list(
        Item.objects.filter(dataset=dataset)
        .order_by("index")
        .values_list("id", flat=True)
    )
    runs = []
    for name in (RUN_A, RUN_B):
        run = Run.objects.create(
            project=project,
            dataset=dataset,
            name=name,
            status="running",
            total=N_RESULTS,
            finished_at=timezone.now(),
        )
        for pos, kind in enumerate(KINDS_USED):
            RunScorer.objects.create(
                run=run,
                name=KINDS[kind].label,
                kind=kind,
                position=pos,
                options=validate_options(kind, {}),
            )
        runs.append(run)
    run_a, run_b = runs
    scorers_a = list(run_a.run_scorers.order_by("position"))
    copy_load(
        Result,
        RESULT_COLUMNS,
        _result_rows(item_ids, scorers_a, user.pk, copy_text(timezone.now())),
        {"run_id": run_a.pk, "attempts": 1},
    )
    _derive_run(run_a, run_b)
    return run_a, run_b


def _derive_run(run_a: Any, run_b: Any) -> None:
    """Run B from run A's rows, server-side: the same analyses, one item in ten
    scored 0.25 lower (its pass recomputed on 0.5), nothing reviewed."""
    from django.db import connection

    from evalsite.evals.models import Result

    copied = [
        f.column
        for f in Result._meta.concrete_fields
        if not f.primary_key
        and f.column
        not in {
            "run_id",
            "run_scorer_id",
            "judge_score",
            "final_score",
            "judge_passed",
            "final_passed",
            "reviewed",
            "human_passed",
            "reviewed_by_id",
            "reviewed_at",
            "assignee_id",
        }
    ]
    cols = ", ".join(f'"{c}"' for c in copied)
    src = ", ".join(f'r."{c}"' for c in copied)
    moved = "(CASE WHEN r.item_id %% 10 = 3 THEN GREATEST(r.judge_score - 0.25, 0) ELSE r.judge_score END)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO evals_result ({cols}, run_id, run_scorer_id, judge_score,
                final_score, judge_passed, final_passed, reviewed)
            SELECT {src}, %s, b.id, {moved}, {moved},
                CASE WHEN r.item_id %% 10 = 3 AND r.judge_score IS NOT NULL
                     THEN {moved} >= 0.5 ELSE r.judge_passed END,
                CASE WHEN r.item_id %% 10 = 3 AND r.judge_score IS NOT NULL
                     THEN {moved} >= 0.5 ELSE r.judge_passed END,
                false
            FROM evals_result r
            JOIN evals_runscorer a ON a.id = r.run_scorer_id
            JOIN evals_runscorer b ON b.run_id = %s AND b.position = a.position
            WHERE r.run_id = %s
            """,
            [run_b.pk, run_b.pk, run_a.pk],
        )


def _reset_reviews(run: Any) -> None:
    """Drop what earlier bench runs' timed overrides and answers changed: the
    overrides, and each overridden result back to its judge's verdict."""
    from django.db import connection, transaction
    from django.db.models import F

    from evalsite.evals.models import ReviewVersion

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM review_override WHERE result_id IN (SELECT id FROM "
            "evals_result WHERE run_id = %s)",
            [run.pk],
        )
        cursor.execute(
            """
            UPDATE evals_result SET final_analysis = analysis,
                final_score = judge_score, final_passed = judge_passed,
                overridden = false, score_overridden = false, pass_overridden = false,
                active_override_count = 0, verdict_flip_count = 0
            WHERE run_id = %s AND overridden
            """,
            [run.pk],
        )
        for rs_id in run.run_scorers.values_list("id", flat=True):
            ReviewVersion.objects.update_or_create(
                run_scorer_id=rs_id,
                defaults={"version": F("version") + 1},
                create_defaults={"version": 1},
            )


def _reviewers(project: Any) -> list[Any]:
    from django.contrib.auth import get_user_model

    from evalsite.accounts.models import Membership, Role

    users = []
    for name in ("bench-million-a", "bench-million-b", "bench-million-c"):
        user, _ = get_user_model().objects.get_or_create(username=name)
        Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": Role.REVIEWER}
        )
        users.append(user)
    return users


def _build_queue(run: Any, reviewers: list[Any]) -> Any:
    """The overlap-3 queue of 50,000 faithfulness results (every 4th item), rebuilt
    every time by COPY: 49,900 decided by three answers, 100 open with two."""
    from django.db import connection, transaction
    from django.utils import timezone

    from evalsite.evals.models import Result
    from evalsite.review.models import FinalRule, QueueEntry, Review, ReviewQueue

    faith = run.run_scorers.get(kind="faithfulness")
    chosen = list(
        Result.objects.filter(run=run, run_scorer=faith, status="ok")
        .order_by("item_id")
        .values_list("id", "judge_passed")[: 4 * QUEUE_SIZE : 4]
    )[:QUEUE_SIZE]
    rng = random.Random(3)
    now = copy_text(timezone.now())
    decided = len(chosen) - OPEN_ENTRIES
    with transaction.atomic():
        old = list(
            ReviewQueue.objects.filter(run=run, name=QUEUE_NAME).values_list(
                "id", flat=True
            )
        )
        if old:
            with connection.cursor() as cursor:
                for table in ("review_review", "review_queueentry"):
                    cursor.execute(
                        f"DELETE FROM {table} WHERE queue_id = ANY(%s)", [old]
                    )
            ReviewQueue.objects.filter(pk__in=old).delete()
        queue = ReviewQueue.objects.create(
            project=run.project,
            run=run,
            name=QUEUE_NAME,
            overlap=OVERLAP,
            final_rule=FinalRule.MAJORITY,
            size=len(chosen),
        )
        votes: list[list[bool]] = []
        for pos, (_, judged) in enumerate(chosen, 1):
            n = OVERLAP if pos <= decided else OVERLAP - 1
            # Reviewers agree with the judge 85 % of the time.
            votes.append(
                [bool(judged) if rng.random() < 0.85 else not judged for _ in range(n)]
            )
        copy_load(
            Review,
            ("result_id", "reviewer_id", "passed", "seconds"),
            (
                [str(rid), str(reviewers[k].pk), copy_text(v), f"{5 + k * 7.5:.1f}"]
                for (rid, _), vs in zip(chosen, votes, strict=True)
                for k, v in enumerate(vs)
            ),
            {"queue_id": queue.pk},
        )
        copy_load(
            QueueEntry,
            (
                "result_id",
                "position",
                "state",
                "answers",
                "answers_pass",
                "answers_fail",
                "decision",
                "decided_at",
            ),
            (
                [
                    str(rid),
                    str(pos),
                    "decided" if pos <= decided else "open",
                    str(len(vs)),
                    str(sum(vs)),
                    str(len(vs) - sum(vs)),
                    copy_text(
                        {
                            "passed": sum(vs) * 2 > len(vs),
                            "flips": {},
                            "score": None,
                            "how": "majority",
                        }
                        if pos <= decided
                        else {}
                    ),
                    now if pos <= decided else r"\N",
                ]
                for pos, ((rid, _), vs) in enumerate(zip(chosen, votes, strict=True), 1)
            ),
            {"queue_id": queue.pk},
        )
    _vacuum("review_review", "review_queueentry")
    return queue


# Measuring ----------------------------------------------------------------------------

_EXPORT_CHILD = r"""
import gc, json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
import django
django.setup()
import pyarrow  # loaded before the baseline: a Parquet export's fixed cost, not its growth
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from bench._common import PeakRss, rss_bytes
settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
client = Client()
client.force_login(get_user_model().objects.get(pk=int(sys.argv[2])))


def vm_hwm():
    # The kernel's peak RSS of this process (since the last reset), in bytes.
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


gc.collect()
baseline = rss_bytes()
try:
    # Reset the kernel's peak to the RSS now ("5": Linux >= 4.0), so VmHWM after the
    # request is this request's peak, however short-lived: a sampling thread misses
    # what happens between its samples, and ru_maxrss holds the parent's RSS at the
    # fork (exec keeps the larger of the two).
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    kernel_peak = True
except OSError:
    kernel_peak = False
with PeakRss() as peak:
    started = time.perf_counter()
    cpu_started = time.process_time()
    response = client.get(sys.argv[1])
    size = 0
    for chunk in response.streaming_content:
        size += len(chunk)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
response.close()
top = vm_hwm() if kernel_peak else None
top = max(top or 0, peak.peak)
print(json.dumps({
    "status": response.status_code,
    "seconds": seconds,
    "cpu": cpu,
    "bytes": size,
    "baseline_mb": baseline / 1e6,
    "peak_mb": top / 1e6,
    "growth_mb": (top - baseline) / 1e6,
    "kernel_peak": kernel_peak,
}))
"""


def _export(url: str, user_id: int) -> dict[str, Any]:
    """The export in its own process (its peak RSS is the export's alone)."""
    from django.db import connection

    root = Path(__file__).resolve().parent.parent
    s = connection.settings_dict
    url_db = f"postgres://{s['USER']}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"
    if s.get("PASSWORD"):
        url_db = f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"
    done = subprocess.run(
        [sys.executable, "-c", _EXPORT_CHILD, url, str(user_id)],
        cwd=root,
        env={**os.environ, "DATABASE_URL": url_db},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"export of {url} failed: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if figures["status"] != 200:
        raise RuntimeError(f"export of {url} answered {figures['status']}")
    return figures


def _row(
    name: str, value: float, unit: str, target: float | None, note: str = ""
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "section": SECTION,
        "name": name,
        "value": value,
        "unit": unit,
        "target": None if target is None else f"≤ {target:g}",
        "ok": None if target is None else value <= target,
    }
    if note:
        row["note"] = note
    return row


def _ingest(project: Any, user: Any) -> list[dict[str, Any]]:
    """The upload of a 200k-row CSV through dataset_create, then deleted."""
    from django.core.files import File
    from django.db import connection

    from bench.bench_ingest import write_csv
    from evalsite.datasets.models import Dataset, Item
    from evalsite.datasets.services import dataset_create

    name = f"million-ingest-{int(time.time())}"
    with tempfile.TemporaryDirectory(prefix="bench-million-") as tmp:
        path = Path(tmp) / "upload_200k.csv"
        size = write_csv(path, rows=INGEST_ROWS)
        gc.collect()
        baseline = rss_bytes()
        try:
            with PeakRss() as rss, open(path, "rb") as fh:
                started = time.perf_counter()
                dataset = dataset_create(
                    project=project, user=user, file=File(fh, name=path.name), name=name
                )
                seconds = time.perf_counter() - started
            stored = Item.objects.filter(dataset=dataset).count()
        finally:
            with connection.cursor() as cursor:
                cursor.execute(
                    "DELETE FROM datasets_item WHERE dataset_id IN (SELECT id FROM "
                    "datasets_dataset WHERE project_id = %s AND name = %s)",
                    [project.pk, name],
                )
            Dataset.objects.filter(project=project, name=name).delete()
            # As autovacuum would (the bench's Postgres runs without it): the 200k
            # dead items sat at the top of datasets_item's primary key, and the
            # planner's probe of its real maximum walked them on every query that
            # joins the items (595 buffers, 2.1 ms of planning for the answer's
            # entry read instead of 50 buffers, 0.4 ms), which the next run's
            # answers and overrides paid.
            _vacuum("datasets_item")
    if stored != INGEST_ROWS:
        raise RuntimeError(f"ingest stored {stored} of {INGEST_ROWS} rows")
    return [
        _row(
            f"upload of a 200k-row CSV ({size / 1e6:.0f} MB): ingest",
            seconds,
            "s",
            INGEST_TARGET_S,
        ),
        _row(
            "upload of 200k rows: peak RSS growth",
            (rss.peak - baseline) / 1e6,
            "MB",
            None,
        ),
    ]


def _writes(
    run: Any, user: Any, queue: Any, reviewers: list[Any]
) -> list[dict[str, Any]]:
    """Overrides (API and the item page's htmx POST) and third answers in the
    overlap-3 queue (API and the queue card), interleaved."""
    from django.test import Client
    from django.urls import reverse

    from evalsite.evals.models import Result
    from evalsite.review.models import QueueEntry
    from scoring import KINDS

    owner = Client()
    owner.force_login(user)
    third = Client()
    third.force_login(reviewers[-1])
    faith = run.run_scorers.get(kind="faithfulness")
    in_queue = QueueEntry.objects.filter(queue=queue).values("result_id")
    targets = list(
        Result.objects.filter(run=run, run_scorer=faith, status="ok", overridden=False)
        .exclude(pk__in=in_queue)
        .order_by("item_id")
        .values_list("id", "final_analysis")[1:4_000:40]
    )[: 2 * (WRITE_REPEAT + 1)]
    allowed = KINDS["faithfulness"].overridable["verdicts.*.verdict"]
    open_positions = list(
        QueueEntry.objects.filter(queue=queue, state=QueueEntry.State.OPEN)
        .order_by("position")
        .values_list("position", flat=True)
    )

    def flip(analysis: dict[str, Any]) -> dict[str, Any]:
        current = analysis["verdicts"][0]["verdict"]
        return {
            "kind": "verdict",
            "path": "verdicts.0.verdict",
            "value": next(v for v in allowed if v != current),
            "note": "bench",
        }

    api_override: list[float] = []
    htmx_override: list[float] = []
    api_answer: list[float] = []
    card_answer: list[float] = []
    for i in range(WRITE_REPEAT + 1):
        pk, analysis = targets[2 * i]
        resp = owner.post(
            f"/api/results/{pk}/overrides",
            flip(analysis),
            content_type="application/json",
        )
        if resp.status_code != 201:
            raise RuntimeError(
                f"override gave {resp.status_code}: {resp.content[:200]!r}"
            )
        pk, analysis = targets[2 * i + 1]
        url = reverse("review:override_create", args=[run.project_id, pk])
        resp2 = owner.post(url, flip(analysis), headers={"HX-Request": "true"})
        if resp2.status_code != 200 or b"hx-swap-oob" not in resp2.content:
            raise RuntimeError(f"htmx override gave {resp2.status_code}")
        resp3 = third.post(
            f"/api/queues/{queue.pk}/entries/{open_positions[2 * i]}/reviews",
            {"passed": i % 2 == 0, "note": "bench"},
            content_type="application/json",
        )
        if resp3.status_code != 201 or resp3.json()["state"] != "decided":
            raise RuntimeError(
                f"answer gave {resp3.status_code}: {resp3.content[:300]!r}"
            )
        card = reverse(
            "review:queue_answer",
            args=[queue.project_id, queue.pk, open_positions[2 * i + 1]],
        )
        resp4 = third.post(
            card,
            {"passed": "pass" if i % 2 else "fail"},
            headers={"HX-Request": "true"},
        )
        if resp4.status_code != 200:
            raise RuntimeError(f"card answer gave {resp4.status_code}")
        if i:  # the first of each warms caches
            api_override.append(server_ms(resp))
            htmx_override.append(server_ms(resp2))
            api_answer.append(server_ms(resp3))
            card_answer.append(server_ms(resp4))
    return [
        *latency_rows(
            SECTION, "override via API incl. aggregates", api_override, WRITE_TARGET_MS
        ),
        *latency_rows(
            SECTION,
            "override via item page (htmx: panel + aggregates)",
            htmx_override,
            WRITE_TARGET_MS,
        ),
        *latency_rows(
            SECTION,
            "3rd answer in overlap-3 queue via API (majority applied)",
            api_answer,
            WRITE_TARGET_MS,
        ),
        *latency_rows(
            SECTION,
            "3rd answer via queue card (htmx)",
            card_answer,
            WRITE_TARGET_MS,
        ),
    ]


def _pages(run: Any, run_b: Any, user: Any) -> list[dict[str, Any]]:
    from django.test import Client
    from django.urls import reverse

    from evalsite.evals.models import Result
    from evalsite.review.explorer.keyset import Cursor
    from evalsite.review.explorer.selectors import COUNT_CAP

    client = Client()
    client.force_login(user)
    htmx = {"HX-Request": "true"}
    p = run.project_id
    faith = run.run_scorers.get(kind="faithfulness")
    result = (
        Result.objects.filter(run=run, run_scorer=faith, status="ok")
        .order_by("item_id")
        .values_list("id", "item_id")[N_ITEMS // 2]
    )
    explorer = reverse("review:explorer", args=[p, run.pk])
    per_page = 50
    api = f"/api/runs/{run.pk}/results"
    deepest = COUNT_CAP // per_page
    # A deep page by keyset: the page after the middle result of the run in the
    # default sort (item, then scorer), as the Next link's `after` cursor names it.
    middle_item = (
        Result.objects.filter(run=run)
        .order_by("item_id")
        .values_list("item_id", flat=True)[N_RESULTS // 2]
    )
    middle = Cursor(0, (middle_item, faith.pk)).encode()
    cases: list[tuple[str, str, dict[str, str]]] = [
        ("run page", reverse("evals:run_detail", args=[p, run.pk]), {}),
        (
            "run page summary (htmx)",
            reverse("evals:run_summary", args=[p, run.pk]),
            htmx,
        ),
        ("explorer, first page (full page)", explorer, {}),
        ("explorer, first page (htmx)", explorer, htmx),
        ("explorer: final fail", f"{explorer}?final=fail", htmx),
        (
            "explorer: scorer + judge fail",
            f"{explorer}?run_scorer={faith.pk}&judge=fail",
            htmx,
        ),
        ("explorer: status error", f"{explorer}?status=error", htmx),
        (
            "explorer: score 0.2-0.4 + not reviewed",
            f"{explorer}?min_score=0.2&max_score=0.4&reviewed=no",
            htmx,
        ),
        ("explorer: reviewed", f"{explorer}?reviewed=yes", htmx),
        ("explorer: overridden", f"{explorer}?overridden=yes", htmx),
        ("explorer: assigned to me", f"{explorer}?mine=on", htmx),
        ("explorer: disagreement", f"{explorer}?disagree=on", htmx),
        ("explorer: sort final score ↓", f"{explorer}?sort=-final", htmx),
        ("explorer: sort updated ↓", f"{explorer}?sort=-updated", htmx),
        ("explorer: text search", f"{explorer}?q=customer+1999", htmx),
        ("explorer: text search, no match", f"{explorer}?q=zebra", htmx),
        (f"explorer: old page link ({deepest})", f"{explorer}?page={deepest}", htmx),
        (
            "explorer: page after result 500,000 (keyset)",
            f"{explorer}?after={middle}",
            htmx,
        ),
        ("explorer: last page (keyset)", f"{explorer}?last=1", htmx),
        (
            "explorer: final fail, last page (keyset)",
            f"{explorer}?final=fail&last=1",
            htmx,
        ),
        ("API results, first 100 (full count)", f"{api}?limit=100", {}),
        (
            "API results, final fail, first 100 (full count)",
            f"{api}?passed=false&limit=100",
            {},
        ),
        (
            "API results, 100 after result 500,000 (keyset)",
            f"{api}?limit=100&after={middle}",
            {},
        ),
        *_matrix_cases(run, faith, middle_item),
        ("item page", reverse("review:item", args=[p, result[0]]), {}),
        (
            "item page (all scorers of the item)",
            reverse("review:run_item", args=[p, run.pk, result[1]]),
            {},
        ),
        (
            "agreement page (50k-item overlap-3 queue)",
            reverse("review:agreement", args=[p, run.pk]),
            {},
        ),
    ]
    out: list[dict[str, Any]] = []
    for name, url, headers in cases:
        out += latency_rows(
            SECTION, name, time_get(client, url, headers, REPEAT), PAGE_TARGET_MS
        )
    # The agreement page right after an answer: every answer bumps its scorer's
    # review version, which names the cached figures. The page then shows the
    # latest figures at once, marked "Recounting", and sends a background recount
    # (agreement_recount_send); before, it recounted in the request (4.8 s). The
    # version bumped as an answer bumps it, without the answer: the queue keeps its
    # answers for _writes. The recount is sent to a list here, not the broker (no
    # worker runs the bench), and timed after each load as a worker would run it.
    from django.db import transaction

    import evalsite.review.team.agreement as agreement_module
    from evalsite.evals.results.verdicts import review_version_touch
    from evalsite.review.estimates.annotators import DEFAULT_EPSILON

    sent: list[tuple[Any, ...]] = []
    send = agreement_module.task_send
    agreement_module.task_send = lambda *a, **k: sent.append(a)  # type: ignore[assignment]
    agreement = reverse("review:agreement", args=[p, run.pk])
    marked, recounts = [], []
    try:
        # The latest figures of every scope (a build of an older version kept only
        # the figures by state).
        agreement_module.agreement_recount(run_id=run.pk, epsilon=DEFAULT_EPSILON)
        for _ in range(AGREEMENT_REPEAT):
            with transaction.atomic():
                review_version_touch(run_scorer=faith)
            resp = client.get(agreement)
            if resp.status_code != 200:
                raise RuntimeError(f"agreement answered {resp.status_code}")
            if b"Recounting: these figures are as of" not in resp.content:
                raise RuntimeError("agreement page after an answer is not marked")
            marked.append(server_ms(resp))
            start = time.perf_counter()
            agreement_module.agreement_recount(run_id=run.pk, epsilon=DEFAULT_EPSILON)
            recounts.append((time.perf_counter() - start) * 1000)
    finally:
        agreement_module.task_send = send  # type: ignore[assignment]
    if len(sent) != AGREEMENT_REPEAT:
        raise RuntimeError(f"{len(sent)} recounts sent for {AGREEMENT_REPEAT} answers")
    out += latency_rows(
        SECTION,
        "agreement page after an answer (latest figures, marked; recount sent)",
        marked,
        PAGE_TARGET_MS,
    )
    out.append(
        _row(
            "agreement background recount after an answer (task) p50",
            statistics.median(recounts),
            "ms",
            None,
            note="one REPEATABLE READ snapshot; the page polls until it is done",
        )
    )
    # The API's limit/offset still works for old clients; OFFSET reads every row
    # before it, so its last page is shown for information, beside the keyset rows
    # (the documented way deep), not against the page target.
    offset = time_get(client, f"{api}?limit=100&offset={N_RESULTS - 100}", {}, 5)
    out.append(
        _row(
            "API results, offset 999,900 (OFFSET, for information) p50",
            statistics.median(offset),
            "ms",
            None,
            note="page deep by the `after` cursor instead (row above)",
        )
    )
    return out


def _matrix_cases(
    run: Any, faith: Any, middle_item: int
) -> list[tuple[str, str, dict[str, str]]]:
    """The results matrix (200k items × 5 scorers) as its htmx region is fetched on
    each filter change: the first page, filters, search, the last page, and the page
    after the middle item by keyset (the cursor of the lead scorer's row, as the Next
    link carries it)."""
    from django.urls import reverse

    from evalsite.evals.models import Result
    from evalsite.review.explorer.keyset import cursor_of

    htmx = {"HX-Request": "true"}
    page = reverse("review:matrix", args=[run.project_id, run.pk])
    lead = run.run_scorers.order_by("position").first()
    middle = cursor_of(
        Result.objects.get(run=run, run_scorer=lead, item_id=middle_item), sort="item"
    ).encode()
    return [
        ("matrix, first page (full page)", page, {}),
        ("matrix, first page (htmx)", page, htmx),
        ("matrix: final fail", f"{page}?final=fail", htmx),
        (
            "matrix: scorer + judge fail",
            f"{page}?run_scorer={faith.pk}&judge=fail",
            htmx,
        ),
        ("matrix: sort final score ↓", f"{page}?sort=-final", htmx),
        ("matrix: text search", f"{page}?q=customer+1999", htmx),
        ("matrix: page after item 100,000 (keyset)", f"{page}?after={middle}", htmx),
        ("matrix: last page (keyset)", f"{page}?last=1", htmx),
    ]


def _compare(run: Any, run_b: Any, user: Any) -> list[dict[str, Any]]:
    """Compare of the two runs (5 scorer pairs of 200k matched items each).

    Cold: nothing cached, as just after a run finished. The page lists its rows and
    leaves the figures to a worker (settings.COMPARE_FIGURES_IN_REQUEST_MAX); the
    count is timed here in-process, as the worker would run it, then the page's
    poll that brings the figures. "Figures on screen" is when a user sees them with
    an idle worker: the page, then the first 1 s poll after the count is done (the
    worker starts while the page is still rendering, so this is an upper bound
    short of the queue's latency). Then after a review of one scorer (its pair
    counted again, the other four from the cache), and cached."""
    from django.core.cache import cache
    from django.db.models import F
    from django.test import Client
    from django.urls import reverse

    from evalsite.compare import figures as figures_module
    from evalsite.evals.models import ReviewVersion

    client = Client()
    client.force_login(user)
    htmx = {"HX-Request": "true"}
    p = run.project_id
    query = f"?a={run.pk}&b={run_b.pk}"
    compare = reverse("compare:compare", args=[p]) + query
    poll = reverse("compare:compare_figures", args=[p]) + query
    sent: list[tuple[Any, ...]] = []
    send = figures_module.task_send
    figures_module.task_send = lambda *a, **k: sent.append(a)  # type: ignore[assignment]

    def sample(pending: int) -> tuple[float, float, float, float]:
        """The page (with `pending` pairs counting), the count, the last poll and
        when the figures are on screen, in ms."""
        resp = client.get(compare, headers=htmx)
        html = resp.content.decode()
        if resp.status_code != 200 or 'id="compare-rows"' not in html:
            raise RuntimeError(f"compare answered {resp.status_code}")
        if html.count('data-stat="counting"') != pending:
            raise RuntimeError("compare page does not mark the pairs counting")
        page = server_ms(resp)
        start = time.perf_counter()
        figures_module.compare_figures_count(
            run_ids=[run.pk, run_b.pk], match="key", key="id"
        )
        count = (time.perf_counter() - start) * 1000
        resp = client.get(poll, headers=htmx)
        if resp.status_code != 286 or b'data-stat="counting"' in resp.content:
            raise RuntimeError(f"compare figures answered {resp.status_code}")
        polled = server_ms(resp)
        polls_before = max(1, -(-(page + count) // POLL_MS))
        return page, count, polled, polls_before * POLL_MS + polled

    out: list[dict[str, Any]] = []
    faith_b = run_b.run_scorers.get(kind="faithfulness")
    # One warm-up, as time_get has: the process's first compare page loads its
    # templates, which a server that has run a while has done.
    client.get(compare, headers=htmx)
    warm_up_sent = len(sent)
    try:
        for label, prepare, pending in (
            ("cold (nothing cached)", cache.clear, len(KINDS_USED)),
            (
                "after a review of one scorer",
                lambda: ReviewVersion.objects.update_or_create(
                    run_scorer_id=faith_b.pk,
                    defaults={"version": F("version") + 1},
                    create_defaults={"version": 1},
                ),
                1,
            ),
        ):
            samples = []
            for _ in range(COMPARE_REPEAT):
                prepare()
                samples.append(sample(pending))
            pages, counts, polls, ready = (list(x) for x in zip(*samples, strict=True))
            out += latency_rows(
                SECTION,
                f"compare 2 × 1M, first page, {label}",
                pages,
                COMPARE_TARGET_MS,
            )
            out += [
                _row(
                    f"compare 2 × 1M, {label}: background count of the figures p50",
                    statistics.median(counts),
                    "ms",
                    None,
                    note=f"max {max(counts):.0f} ms; one REPEATABLE READ snapshot",
                ),
                _row(
                    f"compare 2 × 1M, {label}: the poll that brings them p50",
                    statistics.median(polls),
                    "ms",
                    None,
                ),
                _row(
                    f"compare 2 × 1M, {label}: figures on screen p50",
                    statistics.median(ready),
                    "ms",
                    None,
                    note=f"max {max(ready):.0f} ms; the page, then the first "
                    f"{POLL_MS:.0f} ms poll after the count (idle worker)",
                ),
            ]
    finally:
        figures_module.task_send = send  # type: ignore[assignment]
    if len(sent) - warm_up_sent != 2 * COMPARE_REPEAT:
        raise RuntimeError(
            f"{len(sent) - warm_up_sent} counts sent for {2 * COMPARE_REPEAT} pages"
        )
    out += latency_rows(
        SECTION,
        "compare 2 × 1M, first page, cached",
        time_get(client, compare, htmx, REPEAT),
        COMPARE_TARGET_MS,
    )
    return out


def _exports(run: Any, user: Any) -> list[dict[str, Any]]:
    base = f"/projects/{run.project_id}/runs/{run.pk}"
    out = []
    for label, url, target in (
        ("CSV", f"{base}/export.csv", CSV_TARGET_S),
        ("Parquet", f"{base}/export.parquet", PARQUET_TARGET_S),
    ):
        figures = _export(url, user.pk)
        out += [
            _row(
                f"{label} export of 1M results: wall time",
                figures["seconds"],
                "s",
                target,
            ),
            # The exporting process's own CPU: what the wall time is without the wait
            # for a core on a shared machine (the database's time excluded).
            _row(f"{label} export of 1M results: CPU time", figures["cpu"], "s", None),
            _row(
                f"{label} export of 1M results: peak RSS growth of the process",
                figures["growth_mb"],
                "MB",
                EXPORT_TARGET_MB,
                note=f"its peak {figures['peak_mb']:.0f} MB "
                + ("(kernel VmHWM)" if figures["kernel_peak"] else "(sampled)")
                + f" less {figures['baseline_mb']:.0f} MB before the request "
                "(Django, pyarrow); the first request's imports and the first "
                "Parquet write's library pages included",
            ),
            _row(
                f"{label} export of 1M results: size",
                figures["bytes"] / 1e6,
                "MB",
                None,
            ),
        ]
    return out


def _parts() -> set[str]:
    """The phases BENCH_MILLION_PARTS names (comma-separated), else all of them."""
    named = {p.strip() for p in os.environ.get("BENCH_MILLION_PARTS", "").split(",")}
    named.discard("")
    unknown = named - set(PARTS)
    if unknown:
        raise RuntimeError(f"BENCH_MILLION_PARTS: unknown {sorted(unknown)}; {PARTS}")
    return named or set(PARTS)


def run() -> list[dict[str, Any]]:
    from django.db import connection

    if connection.vendor != "postgresql":
        return [_row("skipped: needs Postgres", 0, "", None)]
    allow_testserver()
    parts = _parts()
    with own_database(SECTION):
        started = time.perf_counter()
        user, run_a, run_b = _build()
        built = time.perf_counter() - started
        started = time.perf_counter()
        _reset_reviews(run_a)
        reviewers = _reviewers(run_a.project)
        # The queue only for the phases that read or answer it.
        queue = _build_queue(run_a, reviewers) if parts & {"pages", "writes"} else None
        # datasets_item too: a database an older run left holds that run's
        # deleted upload (see _ingest).
        _vacuum("evals_result", "review_override", "datasets_item")
        rows = [
            _row("setup: build or reuse 2 × 1M results", built, "s", None),
            _row(
                "setup: reset reviews, build the 50k overlap-3 queue",
                time.perf_counter() - started,
                "s",
                None,
            ),
        ]
        # Two cores shared with other work: the load says how much of a figure is
        # waiting for a core.
        rows.append(
            _row("load average (1 min) before timing", os.getloadavg()[0], "", None)
        )
        gc.collect()
        gc.freeze()
        phases = {
            "pages": lambda: _pages(run_a, run_b, user),
            "compare": lambda: _compare(run_a, run_b, user),
            "writes": lambda: _writes(run_a, user, queue, reviewers),
            "exports": lambda: _exports(run_a, user),
            "ingest": lambda: _ingest(run_a.project, user),
        }
        for name, phase in phases.items():
            if name not in parts:
                continue
            measured = phase()
            # As they come: the whole section takes long on a busy machine, and a
            # run stopped part-way still leaves what it measured.
            for row in measured:
                print(json.dumps(row, default=str), file=sys.stderr, flush=True)
            rows += measured
        gc.unfreeze()
        rows.append(
            _row("load average (1 min) after timing", os.getloadavg()[0], "", None)
        )
    return rows
