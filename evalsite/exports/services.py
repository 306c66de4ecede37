"""Streamed exports of a run's results (CSV, JSONL, Parquet) and of a dataset's items
(CSV, JSONL).

Memory stays constant whatever the size: rows come from the database in chunks of
2,000 tuples (`_ResultRows`, a server-side cursor on Postgres), what reviewers added
to a chunk is read in a fixed number of queries per chunk (`result_batch_extras`, never
one per result), each row is turned into text or a Parquet row group at once, and bytes
leave in pieces through a generator that the view wraps in a StreamingHttpResponse.
Nothing builds a list of all rows. What rows share is written once: an item's columns
once per chunk, a scorer's for each of its results without reviewers' additions
(`_flat_rows`). A CSV of bench_million's 1M results: 45 → 26 s of the exporting
process's CPU, Parquet 40 → 23 s (the same bytes; peak RSS growth 66 and 173 MB, the
latter mostly Arrow's first write and a 10,000-row group).

Columns of a run export (one row per item × scorer), in file order:
    result_id, item_id, item_index, input, output, context (a JSON array), reference,
    metadata.<key> (one column per top-level metadata key found in the dataset, see
    `dataset_metadata_keys`), scorer, scorer_kind, status, judge_score, final_score,
    judge_passed, final_passed, reviewed, reviewer, override_notes, reason, error,
    then what reviewers and the judge added (`RUN_EXTRA`):
    reviewed_at;
    scorer_version (the scorer config's version; empty once the config is deleted),
    scorer_options (JSON, as the run used them, what-if rescoring included),
    judge_model;
    judge_calls, cache_hits, prompt_tokens, completion_tokens (every call of the
    result, cache hits included), latency_ms (the judge's own time of those calls,
    summed; wait_ms, after review_seconds, is their time waiting apart from it: a
    limiter slot, the cache, back-off between retries), cost (the calls that were not
    cache hits at the judge's price per 1k tokens when the run started; 0 for the
    offline judge and scorers without a judge; empty when the judge had no price.
    Runs started before runs recorded prices use the connection's current price, and
    are empty once it is deleted);
    comment_count, comments (every comment, oldest first, one per line as
    "author (YYYY-MM-DD HH:MM UTC): body");
    answer_count, answers (JSON list of every queue answer: reviewer, queue_id, queue,
    passed, score, flips, note, seconds, created_at);
    review_state (open / adjudicate / decided, of the result's overlap-queue entry),
    decision (majority / unanimous / adjudicated), decided_at;
    adjudicator, adjudicated_at, adjudication_passed, adjudication_score,
    adjudication_note (the latest adjudication);
    review_seconds (time spent on every review of the result, where the browser
    measured it, blind answers included: it says how long, not what);
    wait_ms (see latency_ms);
    judge_version (the label of the judge version the judge fields were made with,
    "faithfulness v3 · gpt-4o-mini · 2 examples"; empty without a judge result),
    judge_answers (JSON list of {score, passed}, a judge asked k times; empty when
    asked once), judge_uncertainty (the share of those answers that disagree with
    the majority, 0-0.5);
    answer.<reviewer>.passed, answer.<reviewer>.score, answer.<reviewer>.note (one
    group per reviewer who answered anywhere in the run, sorted by name; their latest
    answer on the result): the wide shape an analyst computes agreement from.
Blind review holds in exports as in the reviews API: answers on an overlap-queue entry
still taking answers are left out (and not counted) unless the exporting user answered
it too (`result_batch_extras`); results blind to the exporting user (review.selectors.
blind) are left out entirely (`run_export_queryset`).

JSONL carries the same fields with JSON types: `context` a list, `metadata` the item's
own object, `override_notes` a list, `comments` a list of {author, created_at, body},
and no answer.<reviewer>.* columns (`answers` has them). Parquet has the CSV's columns,
typed: integers int64, scores and seconds float64, verdicts bool, times timestamp (UTC),
text string, nested values (context, scorer_options, answers) JSON text, metadata
values as text (JSON text when not a string).

Every CSV cell that can hold text goes through `evalsite.lib.csvsafe.safe_cell`, the
one rule that neutralises formula-like text for spreadsheets (= + - @, also after
leading whitespace or line feeds and in their full-width forms); counts, ISO times and
JSON arrays or objects cannot start with those and are written as they are. JSONL and
Parquet are data for programs and are left exact. Judge connections (and so API keys) are never read here beyond
their prices.

To add an item column, add it to ITEM_COLUMNS: every format follows.

A dataset with agent data (a column mapped to an agent field on upload:
`Dataset.agent_fields`) adds those fields after `reference`, in run and dataset exports
alike (`AGENT_COLUMNS`: text as text, lists as JSON, empty when the item has none);
other datasets' exports keep the columns above.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Any, Literal

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import JSONField, QuerySet
from django.db.models.sql.constants import MULTI
from django.utils.text import slugify

from evalsite.datasets.models import Dataset, Item
from evalsite.evals.models import JudgeVersion, Result, Run
from evalsite.exports.parquet_types import JsonText, json_text, list_text, meta_text
from evalsite.exports.selectors import (
    BatchExtras,
    Usage,
    dataset_metadata_keys,
    result_batch_extras,
    run_answer_reviewers,
    run_extras_present,
)
from evalsite.lib.csvsafe import safe_cell
from evalsite.lib.streams import csv_stream, jsonl_stream
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import results_filter, results_selected
from evalsite.review.selectors.blind import blind_run_split

Format = Literal["csv", "jsonl", "parquet"]
DatasetFormat = Literal["csv", "jsonl"]
AnyUser = User | AnonymousUser
# How a column's values are typed: Parquet's column type, and how CSV writes them.
#   int, count (an int that is never None), float, bool, str, time (a datetime, UTC),
#   json (any JSON value, None stays empty; a JsonText is that value encoded already),
#   list (a JSON list, None is []), meta (a metadata value: text as it is, anything
#   else as JSON text).
Kind = Literal["int", "count", "float", "bool", "str", "time", "json", "list", "meta"]

CHUNK_SIZE = 2000
# Rows per Parquet row group: 5 chunks, about 10 MB of Python values at 1 KB a row.
PARQUET_ROWS = 10_000
NOTES_SEPARATOR = " | "
COMMENTS_SEPARATOR = "\n"

# The item's own fields after its id and index: (column, Item field, kind).
ITEM_COLUMNS: tuple[tuple[str, str, Kind], ...] = (
    ("input", "input", "str"),
    ("output", "output", "str"),
    ("context", "context", "list"),
    ("reference", "reference", "str"),
)
# Agent data (evalsite.datasets.agentdata), only for datasets that have it.
AGENT_COLUMNS: dict[str, Kind] = {
    "system_prompt": "str",
    "conversation": "json",
    "tool_calls": "json",
    "expected_tool_calls": "json",
    "expected_trajectory": "json",
    "baseline_output": "str",
}
RUN_HEAD: tuple[tuple[str, Kind], ...] = (
    ("result_id", "count"),
    ("item_id", "count"),
    ("item_index", "count"),
    *((column, kind) for column, _, kind in ITEM_COLUMNS),
)
RUN_TAIL: tuple[tuple[str, Kind], ...] = (
    ("scorer", "str"),
    ("scorer_kind", "str"),
    ("status", "str"),
    ("judge_score", "float"),
    ("final_score", "float"),
    ("judge_passed", "bool"),
    ("final_passed", "bool"),
    ("reviewed", "bool"),
    ("reviewer", "str"),
    ("override_notes", "str"),
    ("reason", "str"),
    ("error", "str"),
)
# After the columns exports always had, so their positions stay where they were.
RUN_EXTRA: tuple[tuple[str, Kind], ...] = (
    ("reviewed_at", "time"),
    ("scorer_version", "int"),
    ("scorer_options", "json"),
    ("judge_model", "str"),
    ("judge_calls", "count"),
    ("cache_hits", "count"),
    ("prompt_tokens", "count"),
    ("completion_tokens", "count"),
    ("latency_ms", "float"),
    ("cost", "float"),
    ("comment_count", "count"),
    ("comments", "str"),
    ("answer_count", "count"),
    ("answers", "json"),
    ("review_state", "str"),
    ("decision", "str"),
    ("decided_at", "time"),
    ("adjudicator", "str"),
    ("adjudicated_at", "time"),
    ("adjudication_passed", "bool"),
    ("adjudication_score", "float"),
    ("adjudication_note", "str"),
    ("review_seconds", "float"),
    ("wait_ms", "float"),
    ("judge_version", "str"),
    ("judge_answers", "json"),
    ("judge_uncertainty", "float"),
)
ANSWER_GROUP: tuple[tuple[str, Kind], ...] = (
    ("passed", "bool"),
    ("score", "float"),
    ("note", "str"),
)
DATASET_HEAD = ("item_id", "index", "input", "output", "context", "reference")

# Columns read per result, as tuples: model instances cost ~3x the time at 100k rows,
# and the analyses (large JSON the export does not show) are never loaded.
_RESULT_VALUES = (
    "id",
    "item_id",
    "item__index",
    *(f"item__{field}" for _, field, _ in ITEM_COLUMNS),
    "item__metadata",
    "run_scorer_id",
    "status",
    "judge_score",
    "final_score",
    "judge_passed",
    "final_passed",
    "reviewed",
    "reviewed_by_id",
    "reviewed_at",
    "reason",
    "error",
    "judge_version_id",
    "judge_answers",
    "judge_uncertainty",
    *(f"item__{name}" for name in AGENT_COLUMNS),
)
_ITEM_AT = 3  # position of the first ITEM_COLUMNS value in a _RESULT_VALUES row
_AFTER_ITEM = _ITEM_AT + len(ITEM_COLUMNS)
_REVIEWED_BY_AT = _RESULT_VALUES.index("reviewed_by_id")
_AGENT_AT = len(_RESULT_VALUES) - len(AGENT_COLUMNS)
_ITEM_VALUES = (
    "id",
    "index",
    "input",
    "output",
    "context",
    "reference",
    "metadata",
    *AGENT_COLUMNS,
)

MEDIA_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}


def run_export_queryset(
    *,
    run: Run,
    query: ResultQuery | None = None,
    user: AnyUser | None = None,
    ids: Collection[int] | None = None,
) -> QuerySet[Result]:
    """The results to export: the explorer's filter and sort (whole run when empty),
    restricted to `ids` when given (the explorer's bulk export of selected rows).

    Every id must be a result of `run` (review's `results_selected` raises
    ApplicationError otherwise): checked here, before the first byte is streamed.

    Results blind to `user` (waiting for their answer in a blind queue, see
    review.selectors.blind) are left out, as the explorer leaves them out: their
    rows would carry the judge's and the final values, and masking them would not
    do under a filter on those values (a row's presence would tell)."""
    who = user or AnonymousUser()
    qs = results_filter(run=run, query=query or ResultQuery(), user=who)
    if ids is not None:
        qs = qs.filter(pk__in=results_selected(run=run, ids=ids))
    qs, _ = blind_run_split(qs, user=who, run=run)
    return qs.select_related(None)


# The JSON columns of a _RESULT_VALUES row, which _ResultRows may leave as JSON text.
_JSON_VALUES = frozenset(
    {"item__context", "item__metadata", "judge_answers"}
    | {f"item__{name}" for name, kind in AGENT_COLUMNS.items() if kind == "json"}
)
_JUDGE_ANSWERS_AT = _RESULT_VALUES.index("judge_answers")


def _loads(value: Any) -> Any:
    return None if value is None else json.loads(value)


class _ResultRows:
    """The `_RESULT_VALUES` rows of a queryset, CHUNK_SIZE at a time, from a
    server-side cursor on Postgres (as `.iterator()`), with the ORM's per-value
    converters run only where they do more than parse JSON.

    JSON columns stay JSON text (None stays None) at the positions in `json_text`,
    known once the first chunk is read: the exports parse an item's once per chunk,
    not once per result (an item has a result per scorer), and a result's
    judge_answers only when set. `.values_list().iterator()` ran Django's converter
    loop on every value of every row and parsed three JSON values per row: 28 of the
    126 s (cProfile) a 200k-row CSV export of bench_million took.
    """

    def __init__(self, qs: QuerySet[Result]) -> None:
        self._values = qs.values_list(*_RESULT_VALUES)
        self.json_text: frozenset[int] = frozenset()

    def __iter__(self) -> Iterator[list[Sequence[Any]]]:
        values = self._values
        compiler = values.query.get_compiler(using=values.db)
        connection = compiler.connection
        chunks = compiler.execute_sql(
            MULTI,
            chunked_fetch=not connection.settings_dict.get(
                "DISABLE_SERVER_SIDE_CURSORS"
            ),
            chunk_size=CHUNK_SIZE,
        )
        selected = getattr(compiler, "select", None) or []
        converters = compiler.get_converters(
            [column for column, _, _ in selected[: len(_RESULT_VALUES)]]
        )
        json_text: set[int] = set()
        convert: list[tuple[int, list[Any], Any]] = []
        for at, (functions, expression) in converters.items():
            only_json = len(functions) == 1 and (
                getattr(functions[0], "__func__", None) is JSONField.from_db_value
            )
            if only_json and _RESULT_VALUES[at] in _JSON_VALUES:
                json_text.add(at)
            else:
                convert.append((at, functions, expression))
        self.json_text = frozenset(json_text)
        for rows in chunks:
            if convert:
                rows = [_converted(row, convert, connection) for row in rows]
            yield rows


def _converted(
    row: Sequence[Any], convert: list[tuple[int, list[Any], Any]], connection: Any
) -> list[Any]:
    values = list(row)
    for at, functions, expression in convert:
        value = values[at]
        for function in functions:
            value = function(value, expression, connection)
        values[at] = value
    return values


class _Scorer:
    """What every result of one run scorer shares: names, version, options, judge
    model and price."""

    __slots__ = ("name", "kind", "version", "options", "judge_model", "price", "_text")

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.kind = kind
        self.version: int | None = None
        self.options: Any = None
        self.judge_model: str | None = None
        # (per 1k prompt tokens, per 1k completion tokens), or None when unknown.
        self.price: tuple[float, float] | None = (0.0, 0.0)
        self._text: tuple[Any, JsonText | None] | None = None

    def options_text(self) -> JsonText | None:
        """The options as JSON text, encoded once (kept with the object encoded)."""
        if self._text is None or self._text[0] is not self.options:
            text = None
            if self.options is not None:
                text = JsonText(json.dumps(self.options, ensure_ascii=False))
            self._text = (self.options, text)
        return self._text[1]


def _run_scorers(run: Run) -> dict[int, _Scorer]:
    scorers: dict[int, _Scorer] = {}
    for rs in run.run_scorers.select_related("scorer", "judge"):
        scorer = _Scorer(rs.name, rs.kind)
        scorer.version = rs.scorer.version if rs.scorer is not None else None
        scorer.options = rs.options
        snapshot = rs.judge_snapshot if isinstance(rs.judge_snapshot, dict) else {}
        judge = rs.judge
        scorer.judge_model = snapshot.get("model") or (judge.model if judge else None)
        if snapshot.get("is_offline") or (judge is None and not snapshot):
            scorer.price = (0.0, 0.0)  # the built-in offline judge, or none: free
        elif "price_per_1k_input" in snapshot or "price_per_1k_output" in snapshot:
            # The price at run time (runs started since 24 Nov 2026 record it).
            scorer.price = _snapshot_price(snapshot)
        elif judge is not None and (
            judge.price_per_1k_input is not None
            or judge.price_per_1k_output is not None
        ):
            scorer.price = (
                float(judge.price_per_1k_input or 0),
                float(judge.price_per_1k_output or 0),
            )
        else:
            scorer.price = None
        scorers[rs.pk] = scorer
    return scorers


def _snapshot_price(snapshot: dict[str, Any]) -> tuple[float, float] | None:
    """(per 1k prompt tokens, per 1k completion tokens) as the run recorded them,
    None when the judge had no price then."""
    prices = [snapshot.get("price_per_1k_input"), snapshot.get("price_per_1k_output")]
    if all(p is None for p in prices):
        return None
    try:
        return (float(prices[0] or 0), float(prices[1] or 0))
    except (TypeError, ValueError):
        return None


_NO_USAGE = Usage()
_NO_ENTRY: dict[str, Any] = {}


def _cost(usage: Usage, price: tuple[float, float] | None) -> float | None:
    if price is None:
        return None
    return (
        usage.paid_prompt_tokens * price[0] + usage.paid_completion_tokens * price[1]
    ) / 1000


class _RunRows:
    """A run export's rows chunk by chunk, with what reviewers and the judge added
    to each chunk (`result_batch_extras`: a fixed number of queries per chunk, never
    one per row, and never anything for the whole run), and what the rows share:
    the run's scorers and judge versions, the dataset's agent fields."""

    def __init__(self, qs: QuerySet[Result], run: Run, user: AnyUser) -> None:
        self.run = run
        self.user_id = user.pk if user.is_authenticated else None
        self.rows = _ResultRows(qs)
        self.scorers = _run_scorers(run)
        self.unknown = _Scorer("", "")
        self.versions: dict[int, str] = dict(
            JudgeVersion.objects.filter(project_id=run.project_id).values_list(
                "pk", "label"
            )
        )
        self.agent = [
            (name, _AGENT_AT + list(AGENT_COLUMNS).index(name))
            for name in run.dataset.agent_fields
        ]

    def chunks(self) -> Iterator[tuple[list[Sequence[Any]], BatchExtras]]:
        present = run_extras_present(run=self.run)
        for chunk in self.rows:
            extras = result_batch_extras(
                result_ids=[row[0] for row in chunk],
                reviewer_ids={
                    row[_REVIEWED_BY_AT]
                    for row in chunk
                    if row[_REVIEWED_BY_AT] is not None
                },
                user_id=self.user_id,
                present=present,
            )
            yield chunk, extras

    def item(self, row: Sequence[Any]) -> list[Any]:
        """The item's values of a row, JSON parsed: index, the ITEM_COLUMNS (a
        "list" one [] when not a list), the metadata ({} when not an object), then
        the agent fields."""
        text = self.rows.json_text
        values: list[Any] = [row[_ITEM_AT - 1]]
        for offset, (_, _, kind) in enumerate(ITEM_COLUMNS):
            at = _ITEM_AT + offset
            value = _loads(row[at]) if at in text else row[at]
            if kind == "list" and not isinstance(value, list):
                value = []
            values.append(value)
        metadata = _loads(row[_AFTER_ITEM]) if _AFTER_ITEM in text else row[_AFTER_ITEM]
        values.append(metadata if isinstance(metadata, dict) else {})
        values.extend(
            _loads(row[at]) if at in text else row[at] for _, at in self.agent
        )
        return values

    def judge_answers(self, row: Sequence[Any]) -> Any:
        value = row[_JUDGE_ANSWERS_AT]
        return _loads(value) if _JUDGE_ANSWERS_AT in self.rows.json_text else value


def _extras_values(
    result_id: int, extras: BatchExtras, scorer: _Scorer
) -> tuple[list[Any], list[dict[str, Any]]]:
    """The values of RUN_EXTRA[1:24] (scorer_version … wait_ms) of one result, as
    Python values (options a JsonText, comments their text), and its answers."""
    usage = extras.usage.get(result_id, _NO_USAGE)
    entry = extras.entries.get(result_id)
    decision = entry.decision if entry is not None else _NO_ENTRY
    adjudication = extras.adjudications.get(result_id, _NO_ENTRY)
    comments = extras.comments.get(result_id, [])
    answers = extras.answers.get(result_id, [])
    return [
        scorer.version,
        scorer.options_text(),
        scorer.judge_model,
        usage.calls,
        usage.cache_hits,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.latency_ms,
        _cost(usage, scorer.price),
        len(comments),
        _comments_text(comments),
        len(answers),
        answers,
        entry.state if entry is not None else None,
        decision.get("how"),
        entry.decided_at if entry is not None else None,
        adjudication.get("adjudicator"),
        adjudication.get("created_at"),
        adjudication.get("passed"),
        adjudication.get("score"),
        adjudication.get("note"),
        extras.review_seconds.get(result_id),
        usage.wait_ms,
    ], answers


_EXTRAS_AT = (1, 24)  # RUN_EXTRA[1:24] is what _extras_values gives


def _with_extras(extras: BatchExtras) -> set[int]:
    """The results of a chunk that have any of what _extras_values reads; every
    other result of a scorer has the same values there."""
    ids = set(extras.usage)
    ids.update(extras.entries, extras.adjudications, extras.comments)
    ids.update(extras.answers, extras.review_seconds)
    return ids


def _result_records(rows: _RunRows) -> Iterator[dict[str, Any]]:
    """One dict per result with JSON-shaped values (the JSONL record)."""
    for chunk, extras in rows.chunks():
        items: dict[int, list[Any]] = {}
        for row in chunk:
            result_id, item_id = row[0], row[1]
            item = items.get(item_id)
            if item is None:
                item = items[item_id] = rows.item(row)
            record: dict[str, Any] = {
                "result_id": result_id,
                "item_id": item_id,
                "item_index": item[0],
            }
            for offset, (column, _, _) in enumerate(ITEM_COLUMNS):
                record[column] = item[1 + offset]
            for offset, (name, _) in enumerate(rows.agent):
                record[name] = item[2 + len(ITEM_COLUMNS) + offset]
            (
                run_scorer_id,
                status,
                judge_score,
                final_score,
                judge_passed,
                final_passed,
                reviewed,
                reviewed_by_id,
                reviewed_at,
                reason,
                error,
                judge_version_id,
                _,
                judge_uncertainty,
            ) = row[_AFTER_ITEM + 1 : _AGENT_AT]
            scorer = rows.scorers.get(run_scorer_id, rows.unknown)
            usage = extras.usage.get(result_id, _NO_USAGE)
            entry = extras.entries.get(result_id)
            decision = entry.decision if entry is not None else _NO_ENTRY
            adjudication = extras.adjudications.get(result_id, _NO_ENTRY)
            comments = extras.comments.get(result_id, [])
            answers = extras.answers.get(result_id, [])
            record.update(
                {
                    "metadata": item[1 + len(ITEM_COLUMNS)],
                    "scorer": scorer.name,
                    "scorer_kind": scorer.kind,
                    "status": status,
                    "judge_score": judge_score,
                    "final_score": final_score,
                    "judge_passed": judge_passed,
                    "final_passed": final_passed,
                    "reviewed": reviewed,
                    "reviewer": extras.usernames.get(reviewed_by_id),
                    "override_notes": extras.notes.get(result_id, []),
                    "reason": reason,
                    "error": error,
                    "reviewed_at": reviewed_at,
                    "scorer_version": scorer.version,
                    "scorer_options": scorer.options,
                    "judge_model": scorer.judge_model,
                    "judge_calls": usage.calls,
                    "cache_hits": usage.cache_hits,
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "latency_ms": usage.latency_ms,
                    "wait_ms": usage.wait_ms,
                    "judge_version": rows.versions.get(judge_version_id),
                    "judge_answers": rows.judge_answers(row),
                    "judge_uncertainty": judge_uncertainty,
                    "cost": _cost(usage, scorer.price),
                    "comment_count": len(comments),
                    "comments": comments,
                    "answer_count": len(answers),
                    "answers": answers,
                    "review_state": entry.state if entry is not None else None,
                    "decision": decision.get("how"),
                    "decided_at": entry.decided_at if entry is not None else None,
                    "adjudicator": adjudication.get("adjudicator"),
                    "adjudicated_at": adjudication.get("created_at"),
                    "adjudication_passed": adjudication.get("passed"),
                    "adjudication_score": adjudication.get("score"),
                    "adjudication_note": adjudication.get("note"),
                    "review_seconds": extras.review_seconds.get(result_id),
                }
            )
            yield record


def _comments_text(comments: list[dict[str, Any]]) -> str | None:
    """Comments one per line, readable in a spreadsheet cell."""
    if not comments:
        return None
    return COMMENTS_SEPARATOR.join(
        f"{c['author'] or '(deleted user)'} "
        f"({c['created_at']:%Y-%m-%d %H:%M} UTC): {c['body']}"
        for c in comments
    )


class RunLayout:
    """The flat columns of a run export (CSV and Parquet), fixed before the first row:
    metadata keys of the whole dataset and every reviewer who answered in the run, so
    filtered and whole-run exports of one run have the same columns."""

    def __init__(
        self,
        *,
        metadata_keys: list[str],
        reviewers: list[str],
        agent_fields: Collection[str] = (),
    ) -> None:
        self.metadata_keys = metadata_keys
        self.reviewers = reviewers
        self.agent = [(name, AGENT_COLUMNS[name]) for name in agent_fields]
        self.columns: list[tuple[str, Kind]] = [
            *RUN_HEAD,
            *self.agent,
            *((f"metadata.{k}", "meta") for k in metadata_keys),
            *RUN_TAIL,
            *RUN_EXTRA,
            *(
                (f"answer.{name}.{part}", kind)
                for name in reviewers
                for part, kind in ANSWER_GROUP
            ),
        ]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.columns]


def run_layout(*, run: Run) -> RunLayout:
    return RunLayout(
        metadata_keys=dataset_metadata_keys(dataset=run.dataset),
        reviewers=run_answer_reviewers(run=run),
        agent_fields=run.dataset.agent_fields,
    )


def run_columns(
    *, metadata_keys: list[str], reviewers: Collection[str] = ()
) -> list[str]:
    return RunLayout(metadata_keys=metadata_keys, reviewers=list(reviewers)).names


class _FlatValues:
    """How one flat format (CSV text, or Parquet's Arrow-ready values) writes a run
    export's values, kind by kind (`Kind`): `cell(kind)` is the function for a
    value of that kind, None where the value is written as it is."""

    def __init__(self, cells: dict[str, Callable[[Any], Any]], default: Any) -> None:
        self._cells = cells
        self._default = default

    def cell(self, kind: str) -> Callable[[Any], Any] | None:
        cell: Callable[[Any], Any] | None = self._cells.get(kind, self._default)
        return cell

    def of(self, kinds: Iterable[str], values: Iterable[Any]) -> list[Any]:
        out = []
        for kind, value in zip(kinds, values, strict=True):
            cell = self.cell(kind)
            out.append(value if cell is None else cell(value))
        return out


def _flat_rows(
    rows: _RunRows, layout: RunLayout, flat: _FlatValues
) -> Iterator[list[Any]]:
    """The values of each row in `layout`'s column order, written by `flat`.

    What a row shares with others is written once: an item's values (its item
    columns, agent fields and metadata keys) once per chunk, a scorer's names and
    what reviewers and the judge added (scorer_version … wait_ms, the answer
    columns) for every result that has none of those additions; only the result's
    own columns are written per row. Writing every cell of every row, from a dict
    per result, was 60 of the 126 s (cProfile) of a 200k-row CSV export.
    """
    # item_index, the ITEM_COLUMNS, the agent fields (rows.item's values, metadata
    # apart)
    item_kinds = [kind for _, kind in (*RUN_HEAD[2:], *layout.agent)]
    meta = flat.cell("meta")
    keys = layout.metadata_keys
    extra_kinds = [kind for _, kind in RUN_EXTRA[_EXTRAS_AT[0] : _EXTRAS_AT[1]]]
    answer_kinds = [kind for _ in layout.reviewers for _, kind in ANSWER_GROUP]
    no_answers = flat.of(answer_kinds, [None] * len(answer_kinds))
    scorer_values: dict[int, list[Any]] = {}

    def scorer_of(run_scorer_id: int) -> list[Any]:
        """The scorer's name and kind, then its RUN_EXTRA[1:24] values for a result
        without additions."""
        found = scorer_values.get(run_scorer_id)
        if found is None:
            scorer = rows.scorers.get(run_scorer_id, rows.unknown)
            quiet, _ = _extras_values(-1, BatchExtras(), scorer)
            found = scorer_values[run_scorer_id] = flat.of(
                ("str", "str", *extra_kinds), (scorer.name, scorer.kind, *quiet)
            )
        return found

    def answer_values(answers: list[dict[str, Any]]) -> list[Any]:
        latest = {a["reviewer"]: a for a in answers}
        values: list[Any] = []
        for name in layout.reviewers:
            answer = latest.get(name)
            if answer is None:
                values.extend((None, None, None))
            else:
                values.extend((answer["passed"], answer["score"], answer["note"]))
        return flat.of(answer_kinds, values)

    count = flat.cell("count") or _same
    time = flat.cell("time") or _same
    json_cell = flat.cell("json") or _same
    float_cell = flat.cell("float") or _same
    bool_cell = flat.cell("bool") or _same
    text = flat.cell("str") or _same
    for chunk, extras in rows.chunks():
        items: dict[int, list[Any]] = {}
        with_extras = _with_extras(extras)
        notes, usernames = extras.notes, extras.usernames
        for row in chunk:
            result_id, item_id = row[0], row[1]
            item = items.get(item_id)
            if item is None:
                values = rows.item(row)
                metadata = values.pop(1 + len(ITEM_COLUMNS))
                item = flat.of(item_kinds, values)
                if keys:
                    item += [
                        metadata.get(k) if meta is None else meta(metadata.get(k))
                        for k in keys
                    ]
                items[item_id] = item
            (
                run_scorer_id,
                status,
                judge_score,
                final_score,
                judge_passed,
                final_passed,
                reviewed,
                reviewed_by_id,
                reviewed_at,
                reason,
                error,
                judge_version_id,
                _,
                judge_uncertainty,
            ) = row[_AFTER_ITEM + 1 : _AGENT_AT]
            shared = scorer_of(run_scorer_id)
            note_list = notes.get(result_id)
            out = [count(result_id), count(item_id), *item]
            out += shared[:2]
            out += (
                text(status),
                float_cell(judge_score),
                float_cell(final_score),
                bool_cell(judge_passed),
                bool_cell(final_passed),
                bool_cell(reviewed),
                text(usernames.get(reviewed_by_id)),
                text(NOTES_SEPARATOR.join(note_list) if note_list else None),
                text(reason),
                text(error),
                time(reviewed_at),
            )
            if result_id in with_extras:
                scorer = rows.scorers.get(run_scorer_id, rows.unknown)
                values, answers = _extras_values(result_id, extras, scorer)
                out += flat.of(extra_kinds, values)
            else:
                answers = []
                out += shared[2:]
            out += (
                text(rows.versions.get(judge_version_id)),
                json_cell(rows.judge_answers(row)),
                float_cell(judge_uncertainty),
            )
            out += answer_values(answers) if answers else no_answers
            yield out


def _same(value: Any) -> Any:
    return value


# ------------------------------------------------------------------ CSV / JSONL


def _json_cell(value: Any) -> str:
    # JSON text of a list or object starts with [ or {: never formula-like; a JSON
    # string (starts with a quote) or number is not either.
    if value is None:
        return ""
    if value.__class__ is JsonText:
        return str(value)
    text = json.dumps(value, ensure_ascii=False)
    # A bare JSON scalar ("-1", a string) is neutralised like any other text.
    return text if isinstance(value, (list, dict)) else safe_cell(text)


def _list_cell(value: Any) -> str:
    return json.dumps(value if isinstance(value, list) else [], ensure_ascii=False)


def _time_cell(value: Any) -> str:
    return "" if value is None else value.isoformat()


_CSV_CELL: dict[str, Callable[[Any], str]] = {
    "count": str,  # an int, never None: a number, nothing to neutralise
    "time": _time_cell,
    "json": _json_cell,
    "list": _list_cell,
}


def _csv_cells(
    record: dict[str, Any], head: Iterable[str], keys: list[str], tail: Iterable[str]
) -> list[str]:
    cell = safe_cell
    cells = [cell(record[c]) for c in head]
    meta = record["metadata"]
    cells.extend(cell(meta.get(k)) for k in keys)
    for column in tail:
        cells.append(cell(record[column]))
    return cells


# Parquet's values by kind (_flat_rows); CSV's are _CSV_CELL's, else safe_cell (looked
# up when an export starts: the one rule, evalsite.lib.csvsafe).
_PARQUET_FLAT = _FlatValues(
    {"json": json_text, "list": list_text, "meta": meta_text}, None
)


def run_export_stream(
    *,
    run: Run,
    fmt: Format,
    query: ResultQuery | None = None,
    user: AnyUser | None = None,
    excel: bool = False,
    ids: Collection[int] | None = None,
) -> Iterator[bytes]:
    """The run's results (or the filtered subset, or the `ids`) as CSV, JSONL or
    Parquet bytes, in pieces.

    The column set is fixed before the first row (`RunLayout`), so filtered and
    whole-run exports of one run have the same columns. `excel` is for CSV only.
    """
    who = user or AnonymousUser()
    qs = run_export_queryset(run=run, query=query, user=who, ids=ids)
    rows = _RunRows(qs, run, who)
    if fmt == "jsonl":
        return jsonl_stream(_result_records(rows))
    layout = run_layout(run=run)
    if fmt == "parquet":
        # pyarrow is imported on the first Parquet export, not by every process
        # that loads the URL conf.
        from evalsite.exports.parquet import parquet_stream

        return parquet_stream(
            layout.columns,
            _flat_rows(rows, layout, _PARQUET_FLAT),
            rows_per_group=PARQUET_ROWS,
            metadata={
                "evalsite.run_id": str(run.pk),
                "evalsite.run_name": run.name,
                "evalsite.dataset_id": str(run.dataset_id),
                "evalsite.filtered": str(
                    bool((query and query.is_filtered()) or ids is not None)
                ).lower(),
            },
        )
    return csv_stream(
        layout.names,
        _flat_rows(rows, layout, _FlatValues(_CSV_CELL, safe_cell)),
        excel=excel,
    )


# ------------------------------------------------------------------ datasets


def dataset_columns(
    *, metadata_keys: list[str], agent_fields: Collection[str] = ()
) -> list[str]:
    """Metadata keys as plain columns (so the file uploads again with the default mapping),
    prefixed "metadata." only where a key would clash with a fixed column."""
    head = [*DATASET_HEAD, *agent_fields]
    return [*head, *(f"metadata.{k}" if k in head else k for k in metadata_keys)]


def _item_records(dataset: Dataset) -> Iterator[dict[str, Any]]:
    rows = (
        Item.objects.filter(dataset=dataset)
        .order_by("index")
        .values_list(*_ITEM_VALUES)
        .iterator(chunk_size=CHUNK_SIZE)
    )
    agent = [
        (name, 7 + list(AGENT_COLUMNS).index(name)) for name in dataset.agent_fields
    ]
    for row in rows:
        item_id, index, input_, output, context, reference, metadata = row[:7]
        record = {
            "item_id": item_id,
            "index": index,
            "input": input_,
            "output": output,
            "context": context if isinstance(context, list) else [],
            "reference": reference,
            "metadata": metadata if isinstance(metadata, dict) else {},
        }
        for name, at in agent:
            record[name] = row[at]
        yield record


def dataset_export_stream(
    *, dataset: Dataset, fmt: DatasetFormat, excel: bool = False
) -> Iterator[bytes]:
    records = _item_records(dataset)
    if fmt == "jsonl":
        return jsonl_stream(records)
    keys = dataset_metadata_keys(dataset=dataset)
    agent = dataset.agent_fields
    rows = (_dataset_csv_cells(r, keys, agent) for r in records)
    return csv_stream(
        dataset_columns(metadata_keys=keys, agent_fields=agent), rows, excel=excel
    )


def _dataset_csv_cells(
    record: dict[str, Any], keys: list[str], agent: list[str]
) -> list[str]:
    cells = _csv_cells(record, DATASET_HEAD, [], ())
    cells.extend(
        _json_cell(record[name])
        if AGENT_COLUMNS[name] == "json"
        else safe_cell(record[name])
        for name in agent
    )
    meta = record["metadata"]
    cells.extend(safe_cell(meta.get(k)) for k in keys)
    return cells


def export_filename(
    *,
    kind: str,
    pk: int,
    fmt: Format,
    filtered: bool = False,
    excel: bool = False,
    name: str = "",
) -> str:
    """A safe, distinct attachment name: "<name>-run-12[-filtered][-excel].csv".

    The object's name goes in as an ASCII slug (letters, digits, hyphens, at most 60)
    so no quote, slash or control character reaches Content-Disposition; the Excel CSV
    variant gets its own name so both downloads can sit side by side."""
    slug = slugify(name)[:60].strip("-")
    parts = [slug] if slug else []
    parts.append(f"{kind}-{pk}")
    if filtered:
        parts.append("filtered")
    if excel and fmt == "csv":
        parts.append("excel")
    return f"{'-'.join(parts)}.{fmt}"
