"""Compare 2–4 runs of one project, scorer by scorer and item by item.

Run A is the baseline; every other run (B, C, D) is compared with it on the items
the two share (selectors.matching: same dataset item by item, else by a metadata key
or identical input). Scorers pair by (kind, name).

Everything a first page shows comes from SQL aggregates and one LIMITed row query
per request, never a Python loop over the results: a 100k-result run costs a few
hash joins in the database (bench/bench_compare.py). The statistics are computed
from those aggregates by scoring.stats (see STATS_METHODS for what the page states).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from django.core.cache import cache
from django.core.exceptions import ObjectDoesNotExist
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.matching.selectors import (
    MAX_SIDES,
    MIN_SIDES,
    DuplicateKey,
    DuplicateKeyError,
    MatchSpec,
    duplicates_message,
    item_key_expression,
)
from evalsite.datasets.matching.services import (
    dataset_match_get_or_create,
    match_duplicates,
)
from evalsite.datasets.models import DatasetMatchPair, Item
from evalsite.evals.models import Result, Run, RunScorer, ScorerConfig
from evalsite.lib.db import column_name, cursor_without_jit
from evalsite.review.selectors.blind import AnyUser, blind_result_ids
from scoring import KINDS
from scoring.stats import (
    PairedT,
    SignTest,
    mcnemar_exact,
    paired_t_from_sums,
    sign_test,
)

SIDE_LABELS = ("A", "B", "C", "D")
RowT = TypeVar("RowT")
# Two scores closer than this are equal (scores are floats of one formula).
EPS = 1e-9
# Deep pages cost a sort of the whole join; past this offset the API and page refuse.
MAX_OFFSET = 100_000
# Aggregates and pages are named by the results' state, so a stale entry is never
# read; the TTL only bounds the memory they hold.
RESULTS_CACHE_TTL = 3600

Only = Literal["", "regressions", "improvements", "flips", "changed"]
ONLY_CHOICES: list[tuple[str, str]] = [
    ("", "All matched items"),
    ("regressions", "Regressed"),
    ("improvements", "Improved"),
    ("flips", "Changed verdict (pass ↔ fail)"),
    ("changed", "Any change"),
]

STATS_METHODS = {
    "mean": "Mean Δ: 95 % paired t-interval over the items both runs scored, with the "
    "paired t-test's p-value.",
    "sign": "Regressed vs improved: exact two-sided sign test (unchanged items left out).",
    "pass": "Pass rate Δ: exact McNemar test (binomial test on the items whose verdict "
    "changed, pass → fail vs fail → pass).",
}


def p_text(p: float | None) -> str:
    """A p-value as the page shows it: "p < 0.001", "p = 0.04", "–" when undefined."""
    if p is None:
        return "–"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


@dataclass
class MatchSummary:
    """How the items of run A and one other run matched (item level, not per scorer)."""

    same_dataset: bool
    items_a: int
    items_b: int
    matched: int
    only_in_a: int  # removed: A's items (with a key) that B lacks
    only_in_b: int  # added
    no_key_a: int
    no_key_b: int
    duplicates: list[DuplicateKey] = field(default_factory=list)
    # The stored matching whose pairs the SQL joins on (None for one dataset, or
    # when nothing matched and so nothing was stored).
    match_id: int | None = None


@dataclass
class ScorerDelta:
    """One scorer (same kind and name) of run A against the same scorer of one other run."""

    a: RunScorer
    b: RunScorer
    direction: str
    n: int = 0  # matched items with a result in both runs
    both_ok: int = 0
    regressions: int = 0
    improvements: int = 0
    unchanged: int = 0
    pass_to_fail: int = 0
    fail_to_pass: int = 0
    missing: int = 0  # matched items where either result is not ok
    a_mean: float | None = None
    b_mean: float | None = None
    mean_delta: float | None = None
    a_pass_rate: float | None = None
    b_pass_rate: float | None = None
    pass_rate_delta: float | None = None
    mean_test: PairedT | None = None
    sign: SignTest | None = None
    mcnemar: SignTest | None = None
    # Row counts per `only` filter, so a filtered page needs no COUNT query.
    rows_by_only: dict[str, int] = field(default_factory=dict)
    # Matched items where both results are ok with a judge verdict, by (A's verdict,
    # B's verdict): the judge figures of the corrected difference (review.estimates).
    judge_cells: dict[tuple[bool, bool], int] = field(default_factory=dict)
    # The cache name of the compared results' state; None: not cached (see
    # _state_token).
    state: str | None = None
    # False: the figures above are not counted yet (runs_compare left them to
    # compare_figures_count); they are zeros and must not be shown.
    counted: bool = True

    @property
    def label(self) -> str:
        return self.a.name

    @property
    def judges_differ(self) -> bool:
        """The two runs' judges are not the same version (prompt, examples, model,
        parameters, ...): a difference may be the judge's, not the system's."""
        return self.a.judge_version_id != self.b.judge_version_id

    @property
    def a_judge_label(self) -> str | None:
        return self.a.judge_version.label if self.a.judge_version else None

    @property
    def b_judge_label(self) -> str | None:
        return self.b.judge_version.label if self.b.judge_version else None

    @property
    def mean_p_text(self) -> str:
        return p_text(self.mean_test.p_value if self.mean_test else None)

    @property
    def sign_p_text(self) -> str:
        return p_text(self.sign.p_value if self.sign else None)

    @property
    def mcnemar_p_text(self) -> str:
        return p_text(self.mcnemar.p_value if self.mcnemar else None)

    def summary(self) -> dict[str, Any]:
        """The figures by name, as the API gives them."""
        t = self.mean_test
        return {
            "n": self.n,
            "both_ok": self.both_ok,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "unchanged": self.unchanged,
            "pass_to_fail": self.pass_to_fail,
            "fail_to_pass": self.fail_to_pass,
            "missing": self.missing,
            "a_mean": self.a_mean,
            "b_mean": self.b_mean,
            "mean_delta": self.mean_delta,
            "mean_delta_ci_low": t.ci_low if t else None,
            "mean_delta_ci_high": t.ci_high if t else None,
            "mean_delta_p": t.p_value if t else None,
            "sign_test_p": self.sign.p_value if self.sign else None,
            "a_pass_rate": self.a_pass_rate,
            "b_pass_rate": self.b_pass_rate,
            "pass_rate_delta": self.pass_rate_delta,
            "mcnemar_p": self.mcnemar.p_value if self.mcnemar else None,
            "a_judge_version": self.a_judge_label,
            "b_judge_version": self.b_judge_label,
            "judge_versions_differ": self.judges_differ,
        }


@dataclass
class Candidate:
    """Run B, C or D against run A."""

    run: Run
    label: str
    match: MatchSummary
    deltas: list[ScorerDelta]
    unmatched_scorers: list[RunScorer]  # this run's scorers run A lacks

    def delta_for(self, a_run_scorer_id: int | None) -> ScorerDelta | None:
        return next((d for d in self.deltas if d.a.pk == a_run_scorer_id), None)


@dataclass
class CompareRow:
    """One matched item: run A's result of a scorer beside the other run's."""

    a_result_id: int
    b_result_id: int
    a_item_id: int
    b_item_id: int
    item_index: int
    a_status: str
    b_status: str
    a_score: float | None
    b_score: float | None
    delta: float | None
    badness: float | None  # > 0: the other run is worse (direction-aware)
    flip: int  # 2: pass → fail, 1: fail → pass, 0: no verdict change
    a_passed: bool | None
    b_passed: bool | None
    a_item: Item | None = None
    b_item: Item | None = None

    @property
    def regression(self) -> bool:
        return self.flip == 2 or (self.badness or 0) > EPS

    @property
    def improvement(self) -> bool:
        return not self.regression and (self.flip == 1 or (self.badness or 0) < -EPS)

    @property
    def pass_flip(self) -> str:
        return {2: "pass_to_fail", 1: "fail_to_pass"}.get(self.flip, "")


@dataclass
class RowsPage(Generic[RowT]):
    """A page of rows (CompareRows, UnmatchedRows) with what a pager needs
    (Paginator's names)."""

    rows: list[RowT]
    number: int
    per_page: int
    # None while the pair's figures are being counted (ScorerDelta.counted False).
    count: int | None
    # Keyset paging (compare_rows): the run A result ids the next and the previous
    # page start after and end before, None where there is no such page.
    next_after: int | None = None
    previous_before: int | None = None
    keyset: bool = False

    def __iter__(self) -> Any:
        return iter(self.rows)

    @property
    def num_pages(self) -> int | None:
        if self.count is None:
            return None
        return max(1, math.ceil(self.count / self.per_page))

    @property
    def paginator(self) -> RowsPage[RowT]:
        return self

    def has_next(self) -> bool:
        if self.keyset:
            return self.next_after is not None
        return self.number < (self.num_pages or 1)

    def has_previous(self) -> bool:
        if self.keyset:
            return self.previous_before is not None
        return self.number > 1

    def has_other_pages(self) -> bool:
        if self.keyset:
            return self.has_next() or self.has_previous()
        return (self.num_pages or 1) > 1

    def next_page_number(self) -> int:
        return self.number + 1

    def previous_page_number(self) -> int:
        return self.number - 1

    def start_index(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.rows else 0


@dataclass
class Comparison:
    runs: list[Run]
    spec: MatchSpec
    baseline_scorers: list[RunScorer]
    candidates: list[Candidate]

    @property
    def run_a(self) -> Run:
        return self.runs[0]

    @property
    def uncounted(self) -> list[ScorerDelta]:
        """The scorer pairs whose figures are left to the background count."""
        return [d for c in self.candidates for d in c.deltas if not d.counted]

    def candidate_for(self, run_id: int | None) -> Candidate:
        """The candidate of that run id, else run B's."""
        return next(
            (c for c in self.candidates if c.run.pk == run_id), self.candidates[0]
        )


def _side_queryset(*, run_scorer_id: int) -> Any:
    """One run scorer's results: the figures only, no item join (items pair through
    their ids; the item text is read for the page's rows alone). These columns are
    review_result_pair_idx's, so Postgres reads them with an index-only scan."""
    return Result.objects.filter(run_scorer_id=run_scorer_id).values(
        rid=F("id"),
        iid=F("item_id"),
        st=F("status"),
        sc=F("final_score"),
        ps=F("final_passed"),
        jp=F("judge_passed"),
    )


def _pair_from(delta: ScorerDelta, *, match: MatchSummary) -> tuple[str, list[Any]]:
    """FROM run A's results of one scorer (sa) joined with run B's results of its
    pair (sb) on the matched items: item by item on one dataset, else through the
    stored matching's pairs (m)."""
    a_sql, a_params = _side_queryset(run_scorer_id=delta.a.pk).query.sql_with_params()
    b_sql, b_params = _side_queryset(run_scorer_id=delta.b.pk).query.sql_with_params()
    if match.same_dataset:
        return (
            f"FROM ({a_sql}) sa JOIN ({b_sql}) sb ON sb.iid = sa.iid",
            [*a_params, *b_params],
        )
    qn = connection.ops.quote_name
    pairs = qn(DatasetMatchPair._meta.db_table)
    match_col, ia, ib = (
        qn(column_name(DatasetMatchPair, f)) for f in ("match", "item_a", "item_b")
    )
    # The pairs' table is joined in each scorer's SELECT, not named once in a WITH:
    # Postgres then may run the scorers' joins in parallel workers (a CTE's scan
    # is parallel-restricted).
    return (
        f"FROM ({a_sql}) sa JOIN {pairs} m ON m.{match_col} = %s AND m.{ia} = sa.iid "
        f"JOIN ({b_sql}) sb ON sb.iid = m.{ib}",
        [*a_params, match.match_id, *b_params],
    )


def _gain(delta: ScorerDelta) -> int:
    """+1 when a higher score is better, -1 when lower is: sign × (B − A) > 0 is an
    improvement of B over A."""
    return -1 if delta.direction == "lower" else 1


def _rows_sql(delta: ScorerDelta, *, match: MatchSummary) -> tuple[str, list[Any]]:
    """The CTE `j` of compare_rows: one row per matched item of one scorer pair, with
    what its order and filters read: the direction-aware badness (> 0: run B is
    worse) and whether the verdict flipped pass → fail (p2f) or fail → pass (f2p).

    Only these: Postgres computes every column a query names for each of the 200k
    joined rows before it keeps 51, so the figures shown are read for the page's
    rows alone (_page_sql); each status comparison is a text comparison per row.
    With the fifteen columns the CTE had, the projection of the join took about
    300 of the query's 500 ms (EXPLAIN ANALYZE, load 7). compare_rows of one pair
    of bench_million's 2 × 200k results, cold: 812 → 630 ms median of 10, the same
    rows (this and the merge join of cursor_without_jit, load 12 on 2 cores)."""
    from_sql, from_params = _pair_from(delta, match=match)
    ok = Result.Status.OK.value
    sql = f"""
        WITH j AS (
            SELECT sa.rid AS a_id, sb.rid AS b_id, sa.iid AS a_item,
                sb.iid AS b_item,
                COALESCE(sa.st = %s AND sb.st = %s AND sa.ps AND NOT sb.ps, FALSE)
                    AS p2f,
                COALESCE(sa.st = %s AND sb.st = %s AND NOT sa.ps AND sb.ps, FALSE)
                    AS f2p,
                CASE WHEN sa.st = %s AND sb.st = %s THEN %s * (sa.sc - sb.sc)
                    END AS bad
            {from_sql}
        )
    """
    return sql, [ok, ok, ok, ok, ok, ok, _gain(delta), *from_params]


def _page_sql(*, where: str, forward: bool) -> str:
    """After _rows_sql: the LIMITed rows of j (`where`, in _ORDER or _REVERSED; two
    parameters, LIMIT and OFFSET) with both results' figures, read by id for those
    rows alone, in the order compare_rows reads them."""
    qn = connection.ops.quote_name
    table = qn(Result._meta.db_table)
    st, sc, ps, pk = (
        qn(column_name(Result, f))
        for f in ("status", "final_score", "final_passed", "id")
    )
    ok = f"'{Result.Status.OK.value}'"
    both = f"ra.{st} = {ok} AND rb.{st} = {ok}"
    order = _ORDER if forward else _REVERSED
    return f"""
        , page AS (
            SELECT a_id, b_id, a_item, b_item, p2f, bad FROM j WHERE {where}
            ORDER BY {order} LIMIT %s OFFSET %s
        )
        SELECT a_id, b_id, a_item, b_item, ra.{st}, rb.{st},
            CASE WHEN ra.{st} = {ok} THEN ra.{sc} END,
            CASE WHEN rb.{st} = {ok} THEN rb.{sc} END,
            CASE WHEN {both} THEN rb.{sc} - ra.{sc} END,
            bad,
            CASE WHEN {both} AND ra.{ps} AND NOT rb.{ps} THEN 2
                WHEN {both} AND NOT ra.{ps} AND rb.{ps} THEN 1 ELSE 0 END,
            ra.{ps}, rb.{ps}
        FROM page JOIN {table} ra ON ra.{pk} = page.a_id
            JOIN {table} rb ON rb.{pk} = page.b_id
        ORDER BY {order}
    """


def _aggregate_sql(
    deltas: list[ScorerDelta], *, match: MatchSummary
) -> tuple[str, list[Any]]:
    """Per scorer pair, the matched items grouped by outcome: both ok, both verdicts,
    the direction-aware change (1 regressed, -1 improved, 0 neither) and, where both
    are ok, both judges' verdicts, with the counts and sums _aggregate_rows adds up.

    One grouped SELECT per scorer pair, glued with UNION ALL, each reading its two
    run scorers by equality and computing only what the grouping needs. Before,
    one join of all pairs (`run_scorer_id IN (…)` joined on the pairs' list) made
    Postgres count the scorer filter twice, expect ~3k joined rows where there were
    ~99k and sort them (269 ms; 226 ms with sorts turned off for the statement);
    the fifteen CASE columns of the rows' CTE cost ~75 ms more over those rows.
    Per pair, on review_result_compare_idx, the four scorers of v1 vs v2 on
    bench_compare's data take 115-135 ms (Postgres 15, load 0.3). On
    review_result_pair_idx (unique: a merge join with no Materialize) and without
    JIT, the five pairs of bench_million's 2 × 1M results take 1.0 s at load 6,
    1.9 s before (JIT 0.46 s of it).
    """
    params: list[Any] = []
    ok = Result.Status.OK.value
    branches: list[str] = []
    for delta in deltas:
        from_sql, from_params = _pair_from(delta, match=match)
        branches.append(
            f"""
            SELECT %s, g.both_ok, g.has_delta, g.a_ps, g.b_ps,
                CASE WHEN g.gain > {EPS} THEN -1 WHEN g.gain < -{EPS} THEN 1
                    ELSE 0 END,
                COUNT(*), SUM(g.a_sc), SUM(g.b_sc), SUM(g.d), SUM(g.d * g.d),
                CASE WHEN g.both_ok THEN g.a_jp END,
                CASE WHEN g.both_ok THEN g.b_jp END
            FROM (
                SELECT sa.st = %s AND sb.st = %s AS both_ok,
                    (sb.sc - sa.sc) IS NOT NULL AS has_delta,
                    sa.ps AS a_ps, sb.ps AS b_ps, sa.sc AS a_sc, sb.sc AS b_sc,
                    sb.sc - sa.sc AS d, %s * (sb.sc - sa.sc) AS gain,
                    sa.jp AS a_jp, sb.jp AS b_jp
                {from_sql}
            ) g
            GROUP BY 2, 3, 4, 5, 6, 12, 13
            """
        )
        params += [delta.a.pk, ok, ok, _gain(delta), *from_params]
    return " UNION ALL ".join(branches), params


_ONLY_SQL = {
    "": "1 = 1",
    "regressions": f"(p2f OR bad > {EPS})",
    "improvements": f"(f2p OR bad < -{EPS})",
    "flips": "(p2f OR f2p)",
    "changed": f"(p2f OR f2p OR bad > {EPS} OR bad < -{EPS})",
}


_JUDGE_CELLS = ((True, True), (True, False), (False, True), (False, False))


def _state_token(run_a: Run, run_b: Run, delta: ScorerDelta) -> str | None:
    """What one scorer pair's final fields are a function of: both runs finished (at
    that time) and both scorers' review versions and options (a review write bumps
    the version in its transaction; a rescore changes the options), as the run
    aggregates' cache has it. None while a run is unfinished: its results still
    change without a review."""
    if not (run_a.is_finished and run_b.is_finished):
        return None
    parts = [f"{run_a.pk}@{run_a.finished_at}", f"{run_b.pk}@{run_b.finished_at}"]
    for rs in (delta.a, delta.b):
        try:
            version = rs.review_version.version
        except ObjectDoesNotExist:
            version = 0
        options = json.dumps(rs.options, sort_keys=True, default=str)
        parts.append(f"{rs.pk}:{version}:{options}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def _aggregate_read(
    *, run_a: Run, candidate: Candidate, spec: MatchSpec
) -> tuple[dict[int, str], dict[int, tuple[Any, ...] | None]]:
    """Name each scorer pair's figures by its results' state (see _state_token) and
    read the cached ones: (cache key per run A scorer id, figures found per id)."""
    keys: dict[int, str] = {}
    for d in candidate.deltas:
        token = _state_token(run_a, candidate.run, d)
        # The matching's id too: figures computed while a matching was dropped
        # (COMPARE_STORED_PAIRS_MAX) are never read for its successor.
        # The rule hashed: a user's key may hold any text, and a cache key must not.
        rule = hashlib.sha256(spec.cache_token().encode()).hexdigest()[:24]
        match_token = f"{rule}:{candidate.match.match_id}"
        d.state = f"{token}:{match_token}" if token else None
        if d.state:
            keys[d.a.pk] = f"review:compare-agg:v3:{d.state}"
    cached = cache.get_many(list(keys.values())) if keys else {}
    found: dict[int, tuple[Any, ...] | None] = {
        pk: cached[key] for pk, key in keys.items() if key in cached
    }
    return keys, found


def _aggregate_count(
    *,
    candidate: Candidate,
    keys: dict[int, str],
    found: dict[int, tuple[Any, ...] | None],
    missing: list[ScorerDelta],
) -> None:
    """_aggregate_rows of the `missing` pairs into `found`, cached under their state
    (a pair with no joined row caches None, so it is not recomputed either)."""
    if not missing:
        return
    fresh = _aggregate_rows(match=candidate.match, deltas=missing)
    new = {d.a.pk: fresh.get(d.a.pk) for d in missing}
    found.update(new)
    cache.set_many(
        {keys[pk]: row for pk, row in new.items() if pk in keys}, RESULTS_CACHE_TTL
    )


def _aggregate_cached(
    *, run_a: Run, candidates: list[Candidate], spec: MatchSpec, count_max: int | None
) -> None:
    """_aggregate_rows per scorer pair, cached under that pair's results' state (see
    _state_token): a review of one scorer recomputes that scorer's pair alone.

    Steps: read what is cached; when the pairs still to count join more than
    `count_max` matched items in all, leave them uncounted (`counted` False; only
    pairs with a state, which a background count can cache); count the rest."""
    reads = [
        (c, *_aggregate_read(run_a=run_a, candidate=c, spec=spec)) for c in candidates
    ]
    todo = [(c, d) for c, _, found in reads for d in c.deltas if d.a.pk not in found]
    joined = sum(c.match.matched for c, d in todo if d.state)
    defer = count_max is not None and joined > count_max
    for candidate, keys, found in reads:
        missing = [d for d in candidate.deltas if d.a.pk not in found]
        if defer:
            for d in missing:
                d.counted = d.state is None
            missing = [d for d in missing if d.counted]
        _aggregate_count(candidate=candidate, keys=keys, found=found, missing=missing)
        _fill_deltas([d for d in candidate.deltas if d.counted], found)


def _aggregate_rows(
    *, match: MatchSummary, deltas: list[ScorerDelta]
) -> dict[int, tuple[Any, ...]]:
    """One grouped query over the join: per run A scorer id, the raw sums and counts."""
    if not deltas:
        return {}
    sql, params = _aggregate_sql(deltas, match=match)
    with cursor_without_jit() as cursor:
        cursor.execute(sql, params)
        groups = cursor.fetchall()
    sums: dict[int, list[Any]] = {}
    for s, both_ok, has_delta, a_ps, b_ps, change, n, *totals, a_jp, b_jp in groups:
        sum_a, sum_b, sum_d, sum_d2 = totals
        row = sums.setdefault(s, [0] * 6 + [0.0] * 4 + [0] * 9)
        # == rather than `is`: SQLite gives 0 and 1 for booleans.
        flip = 0
        if both_ok and a_ps == 1 and b_ps == 0:
            flip = 2
        elif both_ok and a_ps == 0 and b_ps == 1:
            flip = 1
        change = int(change) if both_ok else 0
        row[0] += n
        if both_ok and has_delta:
            row[1] += n
            row[6] += sum_a or 0.0
            row[7] += sum_b or 0.0
            row[8] += sum_d or 0.0
            row[9] += sum_d2 or 0.0
            row[10] += n if a_ps else 0
            row[11] += n if b_ps else 0
        row[2] += n if change == 1 else 0
        row[3] += n if change == -1 else 0
        row[4] += n if flip == 2 else 0
        row[5] += n if flip == 1 else 0
        # the `only` filters' counts, as _ONLY_SQL states them
        row[12] += n if flip == 2 or change == 1 else 0
        row[13] += n if flip == 1 or change == -1 else 0
        row[14] += n if flip > 0 or change != 0 else 0
        # the judges' verdicts where both are ok: (pass, pass), (pass, fail),
        # (fail, pass), (fail, fail)
        if a_jp is not None and b_jp is not None:
            row[15 + 2 * (not a_jp) + (not b_jp)] += n
    return {s: tuple(row) for s, row in sums.items()}


def _fill_deltas(
    deltas: list[ScorerDelta], found: dict[int, tuple[Any, ...] | None]
) -> None:
    """Set each delta's figures and tests from its row of _aggregate_rows."""
    for d in deltas:
        row = found.get(d.a.pk)
        if row is None:
            d.rows_by_only = dict.fromkeys(_ONLY_SQL, 0)
            d.judge_cells = dict.fromkeys(_JUDGE_CELLS, 0)
            continue
        (
            n,
            both_ok,
            reg,
            imp,
            p2f,
            f2p,
            sum_a,
            sum_b,
            sum_d,
            sum_d2,
            a_pass,
            b_pass,
        ) = (
            int(row[0]),
            int(row[1] or 0),
            int(row[2] or 0),
            int(row[3] or 0),
            int(row[4] or 0),
            int(row[5] or 0),
            row[6],
            row[7],
            row[8],
            row[9],
            int(row[10] or 0),
            int(row[11] or 0),
        )
        d.n, d.both_ok, d.regressions, d.improvements = n, both_ok, reg, imp
        d.unchanged = both_ok - reg - imp
        d.pass_to_fail, d.fail_to_pass, d.missing = p2f, f2p, n - both_ok
        if both_ok:
            d.a_mean, d.b_mean = float(sum_a) / both_ok, float(sum_b) / both_ok
            d.mean_delta = float(sum_d) / both_ok
            d.a_pass_rate, d.b_pass_rate = a_pass / both_ok, b_pass / both_ok
            d.pass_rate_delta = d.b_pass_rate - d.a_pass_rate
        d.mean_test = paired_t_from_sums(
            n=both_ok, total=float(sum_d or 0.0), total_sq=float(sum_d2 or 0.0)
        )
        d.sign = sign_test(imp, reg)
        d.mcnemar = mcnemar_exact(f2p, p2f)
        d.rows_by_only = {
            "": n,
            "regressions": int(row[12] or 0),
            "improvements": int(row[13] or 0),
            "flips": p2f + f2p,
            "changed": int(row[14] or 0),
        }
        d.judge_cells = {
            cell: int(n) for cell, n in zip(_JUDGE_CELLS, row[15:19], strict=True)
        }


def match_summary(
    *, run_a: Run, run_b: Run, spec: MatchSpec, side_b: int = 1
) -> MatchSummary:
    """Which items of run A's and run B's datasets match, with the counts the page
    shows and the matched id pairs the SQL joins on: the stored matching of the two
    datasets (services.dataset_matches), matched now the first time."""
    ds_a, ds_b = run_a.dataset_id, run_b.dataset_id
    if ds_a == ds_b:
        # A dataset's items are inserted in its upload's transaction and never
        # change after, so their count is kept by the dataset's id: a COUNT of 200k
        # items took 30–50 ms of every compare page and poll (bench_million, load
        # 5–9).
        key = f"compare:dataset-items:{ds_a}"
        n = cache.get(key)
        if n is None:
            n = Item.objects.filter(dataset_id=ds_a).count()
            cache.set(key, n, RESULTS_CACHE_TTL)
        return MatchSummary(True, n, n, n, 0, 0, 0, 0)
    stored = dataset_match_get_or_create(datasets=(ds_a, ds_b), spec=spec)
    return MatchSummary(
        same_dataset=False,
        items_a=stored.items_a,
        items_b=stored.items_b,
        matched=stored.matched,
        only_in_a=stored.only_in_a,
        only_in_b=stored.only_in_b,
        no_key_a=stored.no_key_a,
        no_key_b=stored.no_key_b,
        duplicates=[
            dataclasses.replace(d, side=side_b) if d.side == 1 else d
            for d in match_duplicates(stored)
        ],
        match_id=stored.pk,
    )


def _scorer_roots(ids: set[int]) -> dict[int, int]:
    """The first version of each scorer config (its lineage), by id: one query per
    generation of edits."""
    parent: dict[int, int | None] = {}
    todo = set(ids)
    while todo:
        rows = dict(
            ScorerConfig.objects.filter(pk__in=todo).values_list("pk", "parent_id")
        )
        parent.update(rows)
        todo = {p for p in rows.values() if p is not None and p not in parent}
    roots: dict[int, int] = {}
    for scorer_id in ids:
        node, seen = scorer_id, set()
        while parent.get(node) is not None and node not in seen:
            seen.add(node)
            node = parent[node]  # type: ignore[assignment]
        roots[scorer_id] = node
    return roots


def runs_compare(
    *, runs: list[Run], spec: MatchSpec | None = None, count_max: int | None = None
) -> Comparison:
    """Compare runs[1:] with runs[0] on their matched items.

    Steps: check 2–4 distinct runs of one project (the caller has checked access);
    match items per candidate (refusing duplicate keys with DuplicateKeyError);
    pair scorers by (kind, name); aggregate each candidate's deltas in one query.

    `count_max` None counts every figure not cached (the API, exports, webhooks).
    Else, when the pairs not cached join more matched items than that, their
    figures are left uncounted (Comparison.uncounted) for compare_figures_count
    (the page's background count).
    """
    spec = spec or MatchSpec()
    if not MIN_SIDES <= len(runs) <= MAX_SIDES:
        raise ApplicationError(
            f"Compare {MIN_SIDES} to {MAX_SIDES} runs, not {len(runs)}.",
            field_errors={"runs": f"choose {MIN_SIDES} to {MAX_SIDES} runs"},
        )
    if len({r.pk for r in runs}) != len(runs):
        raise ApplicationError(
            "Choose different runs.", field_errors={"runs": "a run is chosen twice"}
        )
    if len({r.project_id for r in runs}) != 1:
        raise ApplicationError(
            "Compare runs of one project.", field_errors={"runs": "another project"}
        )
    scorers: dict[int, list[RunScorer]] = {r.pk: [] for r in runs}
    for rs in (
        RunScorer.objects.filter(run__in=[r.pk for r in runs])
        .select_related("review_version", "judge_version")
        .order_by("position", "id")
    ):
        scorers[rs.run_id].append(rs)
    roots = _scorer_roots(
        {rs.scorer_id for side in scorers.values() for rs in side if rs.scorer_id}
    )
    run_a = runs[0]
    labels = [f"run {SIDE_LABELS[i]} (#{r.pk})" for i, r in enumerate(runs)]
    candidates: list[Candidate] = []
    duplicates: list[DuplicateKey] = []
    for side, run_b in enumerate(runs[1:], start=1):
        match = match_summary(run_a=run_a, run_b=run_b, spec=spec, side_b=side)
        for dup in match.duplicates:
            if dup not in duplicates:
                duplicates.append(dup)
        by_key = {(s.kind, s.name): s for s in scorers[run_b.pk]}
        # A scorer edited after a run is a new version with a new name ("Faith v2");
        # it is still the same scorer, so unpaired by name it pairs by its lineage.
        by_lineage = {
            (s.kind, roots[s.scorer_id]): s
            for s in scorers[run_b.pk]
            if s.scorer_id is not None
        }
        deltas: list[ScorerDelta] = []
        paired: set[int] = set()
        for sa in scorers[run_a.pk]:
            sb = by_key.get((sa.kind, sa.name))
            if sb is None and sa.scorer_id is not None:
                sb = by_lineage.get((sa.kind, roots[sa.scorer_id]))
                if sb is not None and (sb.kind, sb.name) in {
                    (s.kind, s.name) for s in scorers[run_a.pk]
                }:
                    sb = None  # that one pairs by name with another of A's scorers
            if sb is None or sb.pk in paired:
                continue
            paired.add(sb.pk)
            spec_kind = KINDS.get(sa.kind)
            deltas.append(
                ScorerDelta(
                    a=sa,
                    b=sb,
                    direction=spec_kind.direction if spec_kind else "higher",
                )
            )
        candidates.append(
            Candidate(
                run=run_b,
                label=SIDE_LABELS[side],
                match=match,
                deltas=deltas,
                unmatched_scorers=[s for s in scorers[run_b.pk] if s.pk not in paired],
            )
        )
    if duplicates:
        raise DuplicateKeyError(
            duplicates_message(duplicates, spec=spec, labels=labels),
            duplicates=duplicates,
        )
    _aggregate_cached(
        run_a=run_a, candidates=candidates, spec=spec, count_max=count_max
    )
    return Comparison(
        runs=runs,
        spec=spec,
        baseline_scorers=scorers[run_a.pk],
        candidates=candidates,
    )


def _page_start(
    *,
    number: int,
    per_page: int,
    offset: int | None,
    count: int | None,
    hint: str = "",
) -> int:
    """The first row of a page (1-based `number`, or an API `offset`). Past MAX_OFFSET
    it is refused (deep pages cost a sort of the whole join); a page past the last
    (a stale link) is the last page, as Paginator.get_page does, once the count is
    known (None: still being counted, and such a page is empty)."""
    start = offset if offset is not None else (max(1, number) - 1) * per_page
    if start > MAX_OFFSET:
        raise ApplicationError(
            f"Pages past item {MAX_OFFSET} are not served{hint}.",
            field_errors={"offset": f"at most {MAX_OFFSET}"},
        )
    if offset is None and count and start >= count:
        start = (max(1, math.ceil(count / per_page)) - 1) * per_page
    return start


# The order of compare_rows: pass → fail flips first, then the rows with a badness
# (largest first), then the rest, each by A's item and result. _K0 and _K1 are its
# first two keys as a keyset bound compares them (_beyond_sql); the ORDER BY says
# the same with the columns themselves, which Postgres then computes once per row.
_K0 = "(CASE WHEN p2f THEN 0 ELSE 1 END)"
_K1 = "(CASE WHEN bad IS NULL THEN 1 ELSE 0 END)"
_ORDER = "p2f DESC, bad DESC NULLS LAST, a_item, a_id"
_REVERSED = "p2f ASC, bad ASC NULLS FIRST, a_item DESC, a_id DESC"


def _beyond_sql(bound: tuple[Any, ...], *, forward: bool) -> tuple[str, list[Any]]:
    """Rows strictly after (forward) or before the row whose (p2f, bad, a_item,
    a_id) is `bound`, in _ORDER."""
    p2f, bad, a_item, a_id = bound
    k0, k1 = (0 if p2f else 1), (1 if bad is None else 0)
    later, earlier = (">", "<") if forward else ("<", ">")
    within = f"(a_item {later} %s OR (a_item = %s AND a_id {later} %s))"
    within_params: list[Any] = [a_item, a_item, a_id]
    if not k1:  # bad descending: later rows have less of it
        within = f"(bad {earlier} %s OR (bad = %s AND {within}))"
        within_params = [bad, bad, *within_params]
    sql = (
        f"({_K0} {later} %s OR ({_K0} = %s AND ({_K1} {later} %s "
        f"OR ({_K1} = %s AND {within}))))"
    )
    return sql, [k0, k0, k1, k1, *within_params]


def _bound(delta: ScorerDelta, *, match: MatchSummary, a_id: int) -> Any:
    """(p2f, bad, a_item, a_id) of the compared row of run A's result `a_id`, None
    when there is none (a page link from another scorer, or a deleted result). The
    page links name a row by its result id, so they show nothing a masked row hides."""
    sql, params = _rows_sql(delta, match=match)
    with cursor_without_jit() as cursor:
        cursor.execute(
            sql + "SELECT p2f, bad, a_item, a_id FROM j WHERE a_id = %s",
            [*params, a_id],
        )
        return cursor.fetchone()


def compare_rows(
    *,
    comparison: Comparison,
    candidate: Candidate,
    delta: ScorerDelta,
    only: str = "",
    number: int = 1,
    per_page: int = 50,
    offset: int | None = None,
    after: int | None = None,
    before: int | None = None,
) -> RowsPage[CompareRow]:
    """A page of one scorer's matched items, regressions first: pass → fail flips,
    then the largest direction-aware losses, then A's item order.

    One LIMITed query over the join (a top-N sort in the database); the items of the
    page's rows are fetched in one more query for their text. The page starts at
    `number` (or `offset`), else after (or ends before) the row of run A's result
    `after` (`before`): keyset paging, so a deep page costs what the first does
    (page 2,000 by OFFSET: 570 ms of database CPU; by keyset as the first, 140 ms;
    bench_million's 200k × 200k pair). `number` is then the page's number as the
    link had it (it is shown, not used).
    """
    if only not in _ONLY_SQL:
        raise ApplicationError(
            f"Unknown filter {only!r}.", field_errors={"only": "unknown"}
        )
    count = delta.rows_by_only.get(only, 0) if delta.counted else None
    sql, params = _rows_sql(delta, match=candidate.match)
    anchor = after if after is not None else before
    bound = (
        _bound(delta, match=candidate.match, a_id=anchor)
        if anchor is not None
        else None
    )
    forward = before is None
    where = _ONLY_SQL[only]
    where_params: list[Any] = []
    start = 0
    if bound is not None:
        beyond, where_params = _beyond_sql(tuple(bound), forward=forward)
        where = f"{where} AND {beyond}"
        number = max(1, number)
    else:
        forward, anchor = True, None
        start = _page_start(
            number=number,
            per_page=per_page,
            offset=offset,
            count=count,
            hint="; page with the next and previous links instead",
        )
        number = start // per_page + 1
    # One row more than the page: whether there is a page beyond it.
    sql += _page_sql(where=where, forward=forward)
    position = f"{start}" if anchor is None else f"{'a' if forward else 'b'}{anchor}"
    key = (
        f"review:compare-rows:v3:{delta.state}:{only}:{position}:{per_page}"
        if delta.state
        else None
    )
    raw: list[tuple[Any, ...]] | None = cache.get(key) if key else None
    if raw is None:
        with cursor_without_jit(merge_join=candidate.match.same_dataset) as cursor:
            cursor.execute(sql, [*params, *where_params, per_page + 1, start])
            raw = [tuple(r) for r in cursor.fetchall()]
        if key:
            cache.set(key, raw, RESULTS_CACHE_TTL)
    more = len(raw) > per_page
    raw = raw[:per_page]
    if not forward:
        raw.reverse()
    # Beyond this page in the direction it was read: `more`; the other way: the
    # anchor row (a keyset page) or the rows before `start`.
    has_next = more if forward else anchor is not None
    has_previous = (anchor is not None or start > 0) if forward else more
    ids = {r[2] for r in raw} | {r[3] for r in raw}
    items = Item.objects.in_bulk(ids) if ids else {}
    rows = [
        CompareRow(
            a_result_id=r[0],
            b_result_id=r[1],
            a_item_id=r[2],
            b_item_id=r[3],
            item_index=items[r[2]].index if r[2] in items else -1,
            a_status=r[4],
            b_status=r[5],
            a_score=r[6],
            b_score=r[7],
            delta=r[8],
            badness=r[9],
            flip=int(r[10]),
            a_passed=None if r[11] is None else bool(r[11]),
            b_passed=None if r[12] is None else bool(r[12]),
            a_item=items.get(r[2]),
            b_item=items.get(r[3]),
        )
        for r in raw
    ]
    return RowsPage(
        rows=rows,
        number=number,
        per_page=per_page,
        count=count,
        next_after=raw[-1][0] if raw and has_next else None,
        previous_before=raw[0][0] if raw and has_previous else None,
        keyset=True,
    )


Unmatched = Literal["removed", "added"]
UNMATCHED_CHOICES: list[tuple[str, str]] = [
    ("", "matched items"),
    ("removed", "only in run A (removed)"),
    ("added", "only in the other run (added)"),
]


@dataclass
class UnmatchedRow:
    """An item of one side that no item of the other matches, with its result of
    the listed scorer in that side's run (None when it has none)."""

    item: Item
    result_id: int | None


def compare_unmatched(
    *,
    comparison: Comparison,
    candidate: Candidate,
    side: Unmatched,
    delta: ScorerDelta | None,
    number: int = 1,
    per_page: int = 50,
    offset: int | None = None,
) -> RowsPage[UnmatchedRow]:
    """The items only run A's dataset holds ("removed") or only the other run's
    ("added"): items with a key that the stored matching does not pair, in item
    order. Their count is the matching's (only_in_a / only_in_b); items without a
    key are counted apart (no_key_a / no_key_b) and not listed."""
    match = candidate.match
    removed = side == "removed"
    count = match.only_in_a if removed else match.only_in_b
    start = _page_start(number=number, per_page=per_page, offset=offset, count=count)
    if match.same_dataset or not count:
        return RowsPage(rows=[], number=1, per_page=per_page, count=0)
    run = comparison.run_a if removed else candidate.run
    items = (
        Item.objects.filter(dataset_id=run.dataset_id)
        .annotate(match_key=item_key_expression(comparison.spec))
        .exclude(match_key__isnull=True)
        .exclude(match_key="")
        .only("id", "index", "input", "output")
        .order_by("index")
    )
    if match.match_id is not None:
        # NOT EXISTS, an anti-join that can spill to disk; NOT IN (subquery) was
        # hashed only while the pairs fit in work_mem, and rescanned them per item
        # beyond that.
        side_column = "item_a" if removed else "item_b"
        paired = DatasetMatchPair.objects.filter(
            match_id=match.match_id, **{side_column: OuterRef("pk")}
        )
        items = items.filter(~Exists(paired))
    page = list(items[start : start + per_page])
    results: dict[int, int] = {}
    if delta is not None and page:
        scorer = delta.a if removed else delta.b
        results = dict(
            Result.objects.filter(
                run_scorer_id=scorer.pk, item_id__in=[i.pk for i in page]
            ).values_list("item_id", "id")
        )
    return RowsPage(
        rows=[UnmatchedRow(item=i, result_id=results.get(i.pk)) for i in page],
        number=start // per_page + 1,
        per_page=per_page,
        count=count,
    )


@dataclass
class SideBySide:
    """One matched item of run A and another run: both items, both runs' results."""

    a_item: Item
    b_item: Item
    results: list[tuple[RunScorer, Result | None, Result | None]]


def compare_item(
    *, comparison: Comparison, candidate: Candidate, a_item_id: int, b_item_id: int
) -> SideBySide:
    """The two items of a compare row, each checked to belong to its run's dataset
    (and so to the project); 404 otherwise."""
    from django.http import Http404

    a_item = Item.objects.filter(
        pk=a_item_id, dataset_id=comparison.run_a.dataset_id
    ).first()
    b_item = Item.objects.filter(
        pk=b_item_id, dataset_id=candidate.run.dataset_id
    ).first()
    if a_item is None or b_item is None:
        raise Http404("No such item in these runs.")
    results = {
        (r.run_id, r.run_scorer_id): r
        for r in Result.objects.filter(
            Q(run_id=comparison.run_a.pk, item_id=a_item.pk)
            | Q(run_id=candidate.run.pk, item_id=b_item.pk)
        )
    }
    return SideBySide(
        a_item=a_item,
        b_item=b_item,
        results=[
            (
                d.a,
                results.get((comparison.run_a.pk, d.a.pk)),
                results.get((candidate.run.pk, d.b.pk)),
            )
            for d in candidate.deltas
        ],
    )


def compare_rows_mask(
    rows: Iterable[CompareRow], *, user: AnyUser, project_id: int, project: Any = None
) -> None:
    """Blank the scores, pass/fail and delta of compare rows whose run A or run B
    result is blind to `user` (in memory). The runs' aggregate deltas still count
    them, as every aggregate does."""
    rows = list(rows)
    ids = {r.a_result_id for r in rows} | {r.b_result_id for r in rows}
    blind = blind_result_ids(
        user=user, project_id=project_id, result_ids=ids, project=project
    )
    for row in rows:
        if row.a_result_id in blind or row.b_result_id in blind:
            row.a_score = row.b_score = row.delta = row.badness = None
            row.a_passed = row.b_passed = None
            row.flip = 0
