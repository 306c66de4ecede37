"""The results matrix of a run: one row per item, one cell per run scorer.

Rows are paged by keyset over *lead* results, one per item: the results of the
scorer the filter names, or else of the run's first scorer. Filters, sort and search
are the explorer's (`results_filter`), so both pages show the same results:

- with a scorer chosen, the filters and the sort apply to that scorer's results;
- with all scorers, an item is a row when any of its results matches, and the sort
  reads the lead (first) scorer's values (the page says so).

Blind review follows the explorer: results blind to the user never match a filter
and never order a row by their values; their cells are masked (selectors.blind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from evalsite.datasets.models import Item
from evalsite.evals.models import Result, Run, RunScorer
from evalsite.review.explorer.keyset import CURSOR_COLUMNS, KeysetPage
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.explorer.selectors import (
    COUNT_CAP,
    RUN_RANGE_SORTS,
    PagedResults,
    results_filter,
    results_page_at,
    results_visible,
)
from evalsite.review.selectors.blind import blind_for, blind_result_ids

AnyUser = User | AnonymousUser

# What a row needs of its lead result: its cursor, and the item's index and input
# (the row header). Loaded whole, with their scorer and assignee, a page's 50 leads
# took 5.0 ms (every row's JSON fields decoded, the scorer's judge snapshot once
# per row), 3.3 ms so (min of 200 reads on bench_results_matrix's data, load ~8).
_LEAD_COLUMNS = (*CURSOR_COLUMNS, "item__id", "item__index", "item__input")


@dataclass
class CellResult:
    """What a cell shows of a result: Result's own names for the columns it reads.

    Plain objects rather than Result instances: a first page's 250 cells took
    10.3 ms read as models with deferred fields, 3.3 ms as tuples (min of 100 reads
    on bench_results_matrix's data, machine load ~8)."""

    pk: int
    item_id: int
    run_scorer_id: int
    status: str
    judge_score: float | None
    judge_passed: bool | None
    final_score: float | None
    final_passed: bool | None
    reviewed: bool
    overridden: bool
    score_overridden: bool

    @property
    def id(self) -> int:
        return self.pk

    def get_status_display(self) -> str:
        return str(Result.Status(self.status).label)


# CellResult's fields, as _results_of_items reads them ("pk" is the id).
_CELL_COLUMNS = tuple(
    "id" if name == "pk" else name for name in CellResult.__dataclass_fields__
)


@dataclass(frozen=True)
class MatrixCell:
    run_scorer: RunScorer
    result: CellResult | None
    blind: bool = False


@dataclass(frozen=True)
class MatrixRow:
    item: Item
    cells: list[MatrixCell]


@dataclass
class Matrix:
    """One page of the matrix and the numbers around it (each counted on the rows)."""

    columns: list[RunScorer]
    lead: RunScorer
    rows: list[MatrixRow]
    page: KeysetPage
    # None when not counted (a filter over all scorers: see matrix_page).
    item_count: int | None
    item_count_capped: bool
    result_count: int
    result_count_capped: bool
    blind_hidden: int


def matrix_page(
    *,
    run: Run,
    query: ResultQuery,
    user: AnyUser,
    run_scorers: list[RunScorer],
    limit: int,
    paging: dict[str, Any],
) -> Matrix:
    """The page of rows `paging` names (ExplorerFilterForm cleaned data).

    Steps: the filter's visible results (blind ones left out, as in the explorer);
    the lead results (one per row) narrowed to items with a matching result; one
    keyset page of leads; then every result of those items, one query, with the
    blind ones among them masked.
    """
    visible = results_visible(run=run, query=query, user=user)
    blind_hidden = visible.blind_hidden
    by_id = {rs.pk: rs for rs in run_scorers}
    if query.run_scorer_id is not None:
        lead_scorer = by_id[query.run_scorer_id]
        leads = visible.ordered
    else:
        lead_scorer = run_scorers[0]
        leads = results_filter(
            run=run,
            query=ResultQuery(run_scorer_id=lead_scorer.pk, sort=query.sort),
            user=user,
        )
        if query.is_filtered():
            leads = leads.filter(item_id__in=visible.matching.values("item_id"))
        if blind_hidden and query.sort not in RUN_RANGE_SORTS:
            # Ordering rows by a blind result's score would tell its judge's value.
            leads = leads.filter(~blind_for(user=user))
    page, lead_rows = results_page_at(
        leads, sort=query.sort, limit=limit, paging=paging, only=_LEAD_COLUMNS
    )
    rows = _rows(
        run=run,
        user=user,
        leads=lead_rows,
        columns=run_scorers,
        # Nothing of the run is blind to the user: no need to ask per cell.
        check_blind=bool(blind_hidden),
    )
    results = PagedResults(visible.matching)
    item_count: int | None = None
    if query.run_scorer_id is not None:
        # One lead per matching result: the rows are the results.
        item_count = results.count() + (1 if results.capped else 0)
    elif not query.is_filtered():
        item_count = leads.order_by().values("pk")[: COUNT_CAP + 1].count()
    # Otherwise the rows (items with any matching result) are not counted: every way
    # to count them walked most of a 100k-item run when few items match (1.27 s by
    # probing each lead, 1.2-1.5 s by DISTINCT item_id, for "not reviewed +
    # overridden" on the bench), and the page needs only the results' count.
    return Matrix(
        columns=run_scorers,
        lead=lead_scorer,
        rows=rows,
        page=page,
        item_count=None if item_count is None else min(item_count, COUNT_CAP),
        item_count_capped=item_count is not None and item_count > COUNT_CAP,
        result_count=results.count(),
        result_count_capped=results.capped,
        blind_hidden=blind_hidden,
    )


def _rows(
    *,
    run: Run,
    user: AnyUser,
    leads: list[Result],
    columns: list[RunScorer],
    check_blind: bool,
) -> list[MatrixRow]:
    item_ids = [lead.item_id for lead in leads]
    cells: dict[tuple[int, int], CellResult] = {
        (r.item_id, r.run_scorer_id): r
        for r in _results_of_items(run=run, item_ids=item_ids)
    }
    blind = (
        blind_result_ids(
            user=user,
            project_id=run.project_id,
            result_ids=[r.pk for r in cells.values()],
            project=run.project if Run.project.is_cached(run) else None,
        )
        if check_blind
        else set()
    )
    rows = []
    for lead in leads:
        row_cells = []
        for rs in columns:
            result = cells.get((lead.item_id, rs.pk))
            hidden = result is not None and result.pk in blind
            if result is not None and hidden:
                # Blanked in memory too, so no template can show the judge's values.
                result.judge_score = result.final_score = None
                result.judge_passed = result.final_passed = None
                result.reviewed = result.overridden = result.score_overridden = False
            row_cells.append(
                MatrixCell(
                    run_scorer=rs,
                    result=result,
                    blind=hidden,
                )
            )
        rows.append(MatrixRow(item=lead.item, cells=row_cells))
    return rows


def _results_of_items(*, run: Run, item_ids: list[int]) -> list[CellResult]:
    """Every result of these items in the run, only the columns a cell shows."""
    rows = Result.objects.filter(run_id=run.pk, item_id__in=item_ids).values_list(
        *_CELL_COLUMNS
    )
    return [CellResult(*row) for row in rows]
