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

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, F, Q

from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.models import Item
from evalsite.evals.models import Result, Run, RunScorer
from evalsite.review.selectors.matching import (
    DUPLICATES_SHOWN,
    MAX_SIDES,
    MIN_SIDES,
    DuplicateKey,
    DuplicateKeyError,
    MatchSpec,
    duplicates_message,
    ensure_sqlite_functions,
    item_key_expression,
)
from scoring import KINDS
from scoring.stats import (
    PairedT,
    SignTest,
    mcnemar_exact,
    paired_t_from_sums,
    sign_test,
)

SIDE_LABELS = ("A", "B", "C", "D")
# Two scores closer than this are equal (scores are floats of one formula).
EPS = 1e-9
# Deep pages cost a sort of the whole join; past this offset the API and page refuse.
MAX_OFFSET = 100_000
MATCH_CACHE_TTL = 24 * 3600

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
    duplicate_count: int = 0


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

    @property
    def label(self) -> str:
        return self.a.name

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
        }


@dataclass
class Candidate:
    """Run B, C or D against run A."""

    run: Run
    label: str
    match: MatchSummary
    deltas: list[ScorerDelta]
    unmatched_scorers: list[RunScorer]  # this run's scorers run A lacks

    def delta_for(self, a_scorer_id: int | None) -> ScorerDelta | None:
        return next((d for d in self.deltas if d.a.pk == a_scorer_id), None)


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
class RowsPage:
    """A page of CompareRows with what a pager needs (Paginator's names)."""

    rows: list[CompareRow]
    number: int
    per_page: int
    count: int

    def __iter__(self) -> Any:
        return iter(self.rows)

    @property
    def num_pages(self) -> int:
        return max(1, math.ceil(self.count / self.per_page))

    @property
    def paginator(self) -> RowsPage:
        return self

    def has_next(self) -> bool:
        return self.number < self.num_pages

    def has_previous(self) -> bool:
        return self.number > 1

    def has_other_pages(self) -> bool:
        return self.num_pages > 1

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

    def candidate_for(self, run_id: int | None) -> Candidate:
        """The candidate of that run id, else run B's."""
        return next(
            (c for c in self.candidates if c.run.pk == run_id), self.candidates[0]
        )


def _side_queryset(
    *, run_id: int, scorer_ids: list[int], spec: MatchSpec, same_dataset: bool
) -> Any:  # a values() queryset; its SQL becomes a CTE
    """One run's results of the given scorers with their item's match key."""
    qs = Result.objects.filter(run_id=run_id, run_scorer_id__in=scorer_ids)
    if same_dataset:
        return qs.values(
            rid=F("id"),
            iid=F("item_id"),
            idx=F("item__index"),
            s=F("run_scorer_id"),
            st=F("status"),
            sc=F("final_score"),
            ps=F("final_passed"),
            k=F("item_id"),
        )
    return (
        qs.annotate(match_key=item_key_expression(spec, prefix="item__"))
        .filter(match_key__isnull=False)
        .exclude(match_key="")
        .values(
            rid=F("id"),
            iid=F("item_id"),
            idx=F("item__index"),
            s=F("run_scorer_id"),
            st=F("status"),
            sc=F("final_score"),
            ps=F("final_passed"),
            k=F("match_key"),
        )
    )


def _joined_sql(
    *, run_a: Run, run_b: Run, deltas: list[ScorerDelta], spec: MatchSpec
) -> tuple[str, list[Any]]:
    """The CTE `j`: one row per matched item × paired scorer, with both results'
    figures, the delta, its direction-aware badness and the verdict flip."""
    same = run_a.dataset_id == run_b.dataset_id
    ensure_sqlite_functions()
    a_sql, a_params = _side_queryset(
        run_id=run_a.pk,
        scorer_ids=[d.a.pk for d in deltas],
        spec=spec,
        same_dataset=same,
    ).query.sql_with_params()
    b_sql, b_params = _side_queryset(
        run_id=run_b.pk,
        scorer_ids=[d.b.pk for d in deltas],
        spec=spec,
        same_dataset=same,
    ).query.sql_with_params()
    values = ", ".join(["(%s, %s, %s)"] * len(deltas))
    pair_params: list[Any] = []
    for d in deltas:
        # sign turns a score delta into a gain: higher-is-better kinds gain when B
        # is higher, lower-is-better kinds when B is lower.
        pair_params += [d.a.pk, d.b.pk, -1 if d.direction == "lower" else 1]
    ok = Result.Status.OK.value
    sql = f"""
        WITH pairs (pa, pb, sgn) AS (VALUES {values}),
        sa AS ({a_sql}),
        sb AS ({b_sql}),
        j AS (
            SELECT p.pa AS s, sa.rid AS a_id, sb.rid AS b_id, sa.iid AS a_item,
                sb.iid AS b_item, sa.idx AS idx, sa.st AS a_st, sb.st AS b_st,
                sa.ps AS a_ps, sb.ps AS b_ps,
                CASE WHEN sa.st = %s THEN sa.sc END AS a_sc,
                CASE WHEN sb.st = %s THEN sb.sc END AS b_sc,
                CASE WHEN sa.st = %s AND sb.st = %s THEN sb.sc - sa.sc END AS d,
                CASE WHEN sa.st = %s AND sb.st = %s
                    THEN p.sgn * (sa.sc - sb.sc) END AS bad,
                CASE WHEN sa.st = %s AND sb.st = %s AND sa.ps = %s AND sb.ps = %s
                        THEN 2
                    WHEN sa.st = %s AND sb.st = %s AND sa.ps = %s AND sb.ps = %s
                        THEN 1
                    ELSE 0 END AS flip
            FROM pairs p
            JOIN sa ON sa.s = p.pa
            JOIN sb ON sb.s = p.pb AND sb.k = sa.k
        )
    """
    params = [
        *pair_params,
        *a_params,
        *b_params,
        ok,
        ok,
        ok,
        ok,
        ok,
        ok,
        *(ok, ok, True, False),
        *(ok, ok, False, True),
    ]
    return sql, params


_ONLY_SQL = {
    "": "1 = 1",
    "regressions": f"(flip = 2 OR bad > {EPS})",
    "improvements": f"(flip = 1 OR bad < -{EPS})",
    "flips": "flip > 0",
    "changed": f"(flip > 0 OR bad > {EPS} OR bad < -{EPS})",
}


def _aggregate(
    *, run_a: Run, run_b: Run, deltas: list[ScorerDelta], spec: MatchSpec
) -> None:
    """Fill every delta's figures from one grouped query over the join."""
    if not deltas:
        return
    sql, params = _joined_sql(run_a=run_a, run_b=run_b, deltas=deltas, spec=spec)
    both = "d IS NOT NULL"
    sql += f"""
        SELECT s, COUNT(*),
            SUM(CASE WHEN {both} THEN 1 ELSE 0 END),
            SUM(CASE WHEN bad > {EPS} THEN 1 ELSE 0 END),
            SUM(CASE WHEN bad < -{EPS} THEN 1 ELSE 0 END),
            SUM(CASE WHEN flip = 2 THEN 1 ELSE 0 END),
            SUM(CASE WHEN flip = 1 THEN 1 ELSE 0 END),
            SUM(CASE WHEN {both} THEN a_sc END),
            SUM(CASE WHEN {both} THEN b_sc END),
            SUM(d), SUM(d * d),
            SUM(CASE WHEN {both} AND a_ps = %s THEN 1 ELSE 0 END),
            SUM(CASE WHEN {both} AND b_ps = %s THEN 1 ELSE 0 END),
            SUM(CASE WHEN {_ONLY_SQL["regressions"]} THEN 1 ELSE 0 END),
            SUM(CASE WHEN {_ONLY_SQL["improvements"]} THEN 1 ELSE 0 END),
            SUM(CASE WHEN {_ONLY_SQL["changed"]} THEN 1 ELSE 0 END)
        FROM j GROUP BY s
    """
    params += [True, True]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = {row[0]: row[1:] for row in cursor.fetchall()}
    for d in deltas:
        row = found.get(d.a.pk)
        if row is None:
            d.rows_by_only = dict.fromkeys(_ONLY_SQL, 0)
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


def _items_with_key(dataset_id: int, spec: MatchSpec) -> Any:
    # Any: the plugin cannot see the match_key annotation callers filter on.
    return (
        Item.objects.filter(dataset_id=dataset_id)
        .annotate(match_key=item_key_expression(spec))
        .filter(match_key__isnull=False)
        .exclude(match_key="")
    )


def _duplicates(
    side: int, dataset_id: int, spec: MatchSpec
) -> tuple[list[DuplicateKey], int]:
    """The first duplicate keys of a dataset (with their items) and how many there are."""
    groups = (
        _items_with_key(dataset_id, spec)
        .values("match_key")
        .annotate(c=Count("id"))
        .filter(c__gt=1)
    )
    total = groups.count()
    if not total:
        return [], 0
    keys = [g["match_key"] for g in groups.order_by("match_key")[:DUPLICATES_SHOWN]]
    found: dict[str, list[tuple[int, int]]] = {}
    for pk, index, key in (
        _items_with_key(dataset_id, spec)
        .filter(match_key__in=keys)
        .order_by("index")
        .values_list("id", "index", "match_key")
    ):
        found.setdefault(str(key), []).append((pk, index))
    return [
        DuplicateKey(
            side=side,
            key=key,
            item_ids=tuple(pk for pk, _ in members),
            item_indexes=tuple(i for _, i in members),
        )
        for key, members in found.items()
    ], total


def match_summary(
    *, run_a: Run, run_b: Run, spec: MatchSpec, side_b: int = 1
) -> MatchSummary:
    """Counts of matched, removed (only in A), added (only in B) and key-less items,
    and the duplicate keys of either dataset. SQL counts, cached: dataset items never
    change, so the figures for a pair of datasets and a rule hold for good."""
    ds_a, ds_b = run_a.dataset_id, run_b.dataset_id
    key = f"review:compare-match:v1:{ds_a}:{ds_b}:{side_b}:{spec.cache_token()}"
    found: MatchSummary | None = cache.get(key)
    if found is not None:
        return found
    if ds_a == ds_b:
        n = Item.objects.filter(dataset_id=ds_a).count()
        summary = MatchSummary(True, n, n, n, 0, 0, 0, 0)
    else:
        ensure_sqlite_functions()
        count_a = Item.objects.filter(dataset_id=ds_a).count()
        count_b = Item.objects.filter(dataset_id=ds_b).count()
        keyed_a = _items_with_key(ds_a, spec)
        keyed_b = _items_with_key(ds_b, spec)
        with_a, with_b = keyed_a.count(), keyed_b.count()
        dup_a, n_dup_a = _duplicates(0, ds_a, spec)
        dup_b, n_dup_b = _duplicates(side_b, ds_b, spec)
        matched = 0
        if not (n_dup_a or n_dup_b):
            a_sql, a_params = keyed_a.values("match_key").query.sql_with_params()
            b_sql, b_params = keyed_b.values("match_key").query.sql_with_params()
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT COUNT(*) FROM ({a_sql}) ka "
                    f"JOIN ({b_sql}) kb ON ka.match_key = kb.match_key",
                    [*a_params, *b_params],
                )
                matched = int(cursor.fetchone()[0])
        summary = MatchSummary(
            same_dataset=False,
            items_a=count_a,
            items_b=count_b,
            matched=matched,
            only_in_a=with_a - matched,
            only_in_b=with_b - matched,
            no_key_a=count_a - with_a,
            no_key_b=count_b - with_b,
            duplicates=dup_a + dup_b,
            duplicate_count=n_dup_a + n_dup_b,
        )
    cache.set(key, summary, MATCH_CACHE_TTL)
    return summary


def runs_compare(*, runs: list[Run], spec: MatchSpec | None = None) -> Comparison:
    """Compare runs[1:] with runs[0] on their matched items.

    Steps: check 2–4 distinct runs of one project (the caller has checked access);
    match items per candidate (refusing duplicate keys with DuplicateKeyError);
    pair scorers by (kind, name); aggregate each candidate's deltas in one query.
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
    for rs in RunScorer.objects.filter(run__in=[r.pk for r in runs]).order_by(
        "position", "id"
    ):
        scorers[rs.run_id].append(rs)
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
        deltas: list[ScorerDelta] = []
        paired: set[int] = set()
        for sa in scorers[run_a.pk]:
            sb = by_key.get((sa.kind, sa.name))
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
    for candidate in candidates:
        _aggregate(run_a=run_a, run_b=candidate.run, deltas=candidate.deltas, spec=spec)
    return Comparison(
        runs=runs,
        spec=spec,
        baseline_scorers=scorers[run_a.pk],
        candidates=candidates,
    )


def compare_rows(
    *,
    comparison: Comparison,
    candidate: Candidate,
    delta: ScorerDelta,
    only: str = "",
    number: int = 1,
    per_page: int = 50,
    offset: int | None = None,
) -> RowsPage:
    """A page of one scorer's matched items, regressions first: pass → fail flips,
    then the largest direction-aware losses, then A's item order.

    One LIMITed query over the join (a top-N sort in the database); the items of the
    page's rows are fetched in one more query for their text.
    """
    if only not in _ONLY_SQL:
        raise ApplicationError(
            f"Unknown filter {only!r}.", field_errors={"only": "unknown"}
        )
    start = offset if offset is not None else (max(1, number) - 1) * per_page
    if start > MAX_OFFSET:
        raise ApplicationError(
            f"Pages past item {MAX_OFFSET} are not served; filter the items instead.",
            field_errors={"offset": f"at most {MAX_OFFSET}"},
        )
    count = delta.rows_by_only.get(only, 0)
    if offset is None and count and start >= count:
        # Past the last page (a stale link): the last page, as Paginator.get_page does.
        number = max(1, math.ceil(count / per_page))
        start = (number - 1) * per_page
    sql, params = _joined_sql(
        run_a=comparison.run_a,
        run_b=candidate.run,
        deltas=[delta],
        spec=comparison.spec,
    )
    sql += f"""
        SELECT a_id, b_id, a_item, b_item, idx, a_st, b_st, a_sc, b_sc, d, bad, flip,
            a_ps, b_ps
        FROM j WHERE {_ONLY_SQL[only]}
        ORDER BY CASE WHEN flip = 2 THEN 0 ELSE 1 END, (bad IS NULL), bad DESC, idx, a_id
        LIMIT %s OFFSET %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, per_page, start])
        raw = cursor.fetchall()
    rows = [
        CompareRow(
            a_result_id=r[0],
            b_result_id=r[1],
            a_item_id=r[2],
            b_item_id=r[3],
            item_index=r[4],
            a_status=r[5],
            b_status=r[6],
            a_score=r[7],
            b_score=r[8],
            delta=r[9],
            badness=r[10],
            flip=int(r[11]),
            a_passed=None if r[12] is None else bool(r[12]),
            b_passed=None if r[13] is None else bool(r[13]),
        )
        for r in raw
    ]
    ids = {r.a_item_id for r in rows} | {r.b_item_id for r in rows}
    items = Item.objects.in_bulk(ids) if ids else {}
    for row in rows:
        row.a_item, row.b_item = items.get(row.a_item_id), items.get(row.b_item_id)
    return RowsPage(
        rows=rows,
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
