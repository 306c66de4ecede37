"""Result filtering and paging for the results explorer.

`results_filter` is the one place result filtering lives: the explorer page, the
results API, queue building and the exports all parse their parameters into one
`review.schemas.ResultQuery` and call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db.models import F, QuerySet

from evalsite.accounts.models import REVIEW_ROLES
from evalsite.core.exceptions import ApplicationError
from evalsite.datasets.selectors import items_matching
from evalsite.evals.models import Result, Run
from evalsite.lib.text import text_check_storable
from evalsite.review.explorer.keyset import (
    Cursor,
    KeysetPage,
    cursor_of,
    keyset_page,
)
from evalsite.review.models import ReviewQueue
from evalsite.review.selectors.blind import blind_for, blind_run_split

if TYPE_CHECKING:
    # schemas builds ResultQuery on this module's SORTS; only the type comes back.
    from evalsite.review.explorer.schemas import ResultQuery

User = AuthUser | AnonymousUser


# Sort key -> ORDER BY, on Result columns only so an index can serve it without a join.
# "item" orders by item id: a dataset's items are inserted in file order in one
# transaction (datasets.services._insert_items), so item ids increase with the index,
# and the unique (run, item, run_scorer) index answers it with no sort at all (it leads
# with run_id: see RUN_RANGE_SORTS). Every ordering ends in a unique column so pages
# never overlap; descending sorts break ties by descending id too, so one backward
# scan of a (…, score, id) index serves them (explorer.keyset pages these orders).
SORTS: dict[str, tuple[Any, ...]] = {
    "item": ("run_id", "item_id", "run_scorer_id"),
    "-item": ("-run_id", "-item_id", "-run_scorer_id"),
    "score": (F("judge_score").asc(nulls_last=True), "id"),
    "-score": (F("judge_score").desc(nulls_last=True), "-id"),
    "final": (F("final_score").asc(nulls_last=True), "id"),
    "-final": (F("final_score").desc(nulls_last=True), "-id"),
    "updated": ("updated_at", "id"),
    "-updated": ("-updated_at", "-id"),
    # A judge asked several times: its split (most uncertain first), then the item.
    "-uncertainty": (
        F("judge_uncertainty").desc(nulls_last=True),
        "item_id",
        "id",
    ),
    "uncertainty": (F("judge_uncertainty").asc(nulls_last=True), "item_id", "id"),
}


SORT_LABELS = {
    "item": "Item index ↑",
    "-item": "Item index ↓",
    "score": "Judge score ↑",
    "-score": "Judge score ↓",
    "final": "Final score ↑",
    "-final": "Final score ↓",
    "updated": "Updated ↑",
    "-updated": "Updated ↓",
    "-uncertainty": "Judge uncertainty ↓ (most uncertain first)",
    "uncertainty": "Judge uncertainty ↑",
}


DEFAULT_SORT = "item"


# Sorts whose run is filtered as a one-value range (r <= run_id <= r), not run_id = r.
# With `=` Postgres treats run_id as a constant and drops it from the ORDER BY; then
# the single-column item_id index (the FK's) looks presorted too, and with a LIMIT the
# planner walks it from the lowest item id, filtering out every other run's results
# first (200k rows, ~100 ms, once a database holds older runs). With the range, run_id
# stays a sort key and only the unique (run, item, run_scorer) index supplies the order.
RUN_RANGE_SORTS = frozenset({"item", "-item"})


Q_MAX_LENGTH = 200


def results_filter(
    *, run: Run, query: ResultQuery, user: User, ordered: bool = True
) -> QuerySet[Result]:
    """The run's results matching `query`, sorted, with the columns the lists show.

    Filters map onto indexed columns of Result (run, run_scorer, status, final_passed,
    assignee); text search matches the item's input and output, through one trigram
    index on Postgres (datasets.selectors.ItemSearchText).

    With `ordered=False`, the same rows unsorted and without joins, for counting or
    a semi-join: the run is then filtered by `=` whatever the sort, since only an
    ORDER BY needs the range (RUN_RANGE_SORTS). With the range, Postgres counted a
    text search's matches by hashing the items and scanning the run's results (68
    ms for "region 13" on bench_results_matrix's 500k results, min of 10 at machine
    load ~9); with `=` it probes the unique (run, item, run_scorer) index per
    matching item (18 ms).
    """
    sort = query.sort if query.sort in SORTS else DEFAULT_SORT
    if sort in RUN_RANGE_SORTS and ordered:
        qs = Result.objects.filter(run_id__gte=run.pk, run_id__lte=run.pk)
    else:
        qs = Result.objects.filter(run=run)
    if query.run_scorer_id is not None:
        qs = qs.filter(run_scorer_id=query.run_scorer_id)
    if query.status:
        qs = qs.filter(status=query.status)
    if query.judge_passed is not None:
        qs = qs.filter(judge_passed=query.judge_passed)
    if query.passed is not None:
        qs = qs.filter(final_passed=query.passed)
    if query.min_score is not None:
        qs = qs.filter(final_score__gte=query.min_score)
    if query.max_score is not None:
        qs = qs.filter(final_score__lte=query.max_score)
    if query.reviewed is not None:
        qs = qs.filter(reviewed=query.reviewed)
    if query.overridden is not None:
        qs = qs.filter(overridden=query.overridden)
    if query.mine:
        qs = qs.filter(assignee_id=user.pk if user.is_authenticated else None)
    if query.disagree:
        # The final numbers leave the judge's only through an active override (the
        # review services recompute final = judge otherwise), so "a final verdict that
        # differs, or any active override" is exactly `overridden`: one small partial
        # index (review_result_overridden_reviewed_idx) instead of a scan of the run.
        qs = qs.filter(overridden=True)
    if query.uncertain:
        # The judge's own answers disagree (it was asked several times).
        qs = qs.filter(judge_uncertainty__gt=0)
    if query.judge_instructions:
        # Found once per item on upload (datasets: Item.judge_instructions).
        qs = qs.exclude(item__judge_instructions=[])
    text = (query.q or "").strip()
    if text:
        # Postgres refuses NUL even as a query parameter: a 400, not a server error.
        text_check_storable(text, field="q")
        # A semi-join on the run's dataset: one scan of its items, not one per result.
        matching = items_matching(dataset_id=run.dataset_id, text=text)
        qs = qs.filter(item_id__in=matching.values("id"))
    if not ordered:
        return qs.order_by()
    return qs.select_related("item", "run_scorer", "assignee").order_by(*SORTS[sort])


@dataclass(frozen=True)
class VisibleResults:
    """A filter's results that the user may see: those blind to them left out."""

    # Sorted, for pages (results_page_at).
    ordered: QuerySet[Result]
    # The same rows unsorted, for counts and semi-joins (results_filter's ordered=False).
    matching: QuerySet[Result]
    # How many results of the whole run are blind to the user (selectors.blind).
    blind_hidden: int


def results_visible(*, run: Run, query: ResultQuery, user: User) -> VisibleResults:
    """The results of `query` that `user` may see, as the explorer and the matrix
    show them: blind results match no filter and order nothing."""
    ordered, blind_hidden = blind_run_split(
        results_filter(run=run, query=query, user=user), user=user, run=run
    )
    matching = results_filter(run=run, query=query, user=user, ordered=False)
    if blind_hidden:
        matching = matching.filter(~blind_for(user=user))
    return VisibleResults(ordered=ordered, matching=matching, blind_hidden=blind_hidden)


def results_page(
    qs: QuerySet[Result], *, offset: int, limit: int, only: Sequence[str] = ()
) -> list[Result]:
    """One page of `qs`: the ids first (sorted on Result's own indexed columns, no
    joins), then those rows with their item, scorer and assignee (or the `only`
    columns: _rows_in_order). Joining before the LIMIT would make the database join
    every matching row of a 100k-result run."""
    ids = list(qs.values_list("id", flat=True)[offset : offset + limit])
    return _rows_in_order(ids, only=only)


def _rows_in_order(ids: list[int], *, only: Sequence[str] = ()) -> list[Result]:
    """The results of `ids` in that order, with their item, scorer and assignee; with
    `only`, just those columns (the item's as "item__<field>", item only joined)."""
    rows = Result.objects.filter(id__in=ids)
    if only:
        rows = rows.select_related("item").only(*only)
    else:
        rows = rows.select_related("item", "run_scorer", "assignee")
    by_id = {row.pk: row for row in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


def results_keyset(
    qs: QuerySet[Result],
    *,
    sort: str,
    limit: int,
    after: Cursor | None = None,
    before: Cursor | None = None,
    last_page: bool = False,
    only: Sequence[str] = (),
) -> tuple[KeysetPage, list[Result]]:
    """One keyset page of `qs` (see explorer.keyset) and its rows with their item,
    scorer and assignee (or the `only` columns: _rows_in_order), in sort order."""
    page = keyset_page(
        qs,
        sort=sort if sort in SORTS else DEFAULT_SORT,
        limit=limit,
        after=after,
        before=before,
        last_page=last_page,
    )
    return page, _rows_in_order(page.ids, only=only)


def results_page_at(
    qs: QuerySet[Result],
    *,
    sort: str,
    limit: int,
    paging: dict[str, Any],
    only: Sequence[str] = (),
) -> tuple[KeysetPage, list[Result]]:
    """The page `paging` names (an ExplorerFilterForm's cleaned data: after_cursor,
    before_cursor, last, or an old bookmark's page number; the API's offset) as a
    keyset page, its rows loaded whole or with the `only` columns (which must hold
    keyset.CURSOR_COLUMNS: the cursors read them).

    A page number or offset reads by offset, as before cursors; the links from it
    continue by cursor."""
    sort = sort if sort in SORTS else DEFAULT_SORT
    offset = paging.get("offset")
    if offset is None:
        offset = ((paging.get("page") or 1) - 1) * limit
    cursors = ("after_cursor", "before_cursor", "last")
    if offset > 0 and not any(paging.get(k) for k in cursors):
        rows = results_page(qs, offset=offset, limit=limit + 1, only=only)
        more, rows = len(rows) > limit, rows[:limit]
        return (
            KeysetPage(
                ids=[r.pk for r in rows],
                first=cursor_of(rows[0], sort=sort) if rows else None,
                last=cursor_of(rows[-1], sort=sort) if rows else None,
                has_next=more,
                has_previous=True,
            ),
            rows,
        )
    return results_keyset(
        qs,
        sort=sort,
        limit=limit,
        after=paging.get("after_cursor"),
        before=paging.get("before_cursor"),
        last_page=bool(paging.get("last")),
        only=only,
    )


# Counting 100k matching rows costs more than fetching a page; past this many the list
# says "10,000+" and people narrow the filters (or sort) rather than page to the end.
COUNT_CAP = 10_000


class PagedResults:
    """What Django's Paginator needs (count + slicing), paging through `results_page`.

    The count stops at COUNT_CAP (`capped` tells the template to print "10,000+")."""

    def __init__(self, qs: QuerySet[Result], *, cap: int | None = None) -> None:
        self.qs = qs
        self.cap = COUNT_CAP if cap is None else cap
        self.capped = False
        self._count: int | None = None

    def count(self) -> int:
        if self._count is None:
            # Ids only: the page's select_related joins would be made for every
            # counted row (the item a second time, beside the text search's).
            counted = self.qs.order_by().values("pk")[: self.cap + 1].count()
            self.capped = counted > self.cap
            self._count = min(counted, self.cap)
        return self._count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, key: slice) -> list[Result]:
        start = key.start or 0
        return results_page(self.qs, offset=start, limit=(key.stop or start) - start)


# Explicit ids per bulk request: a page holds at most 200 (the largest page size); the
# API may name more, but past this many a client sends the filter instead.
SELECTION_MAX_IDS = 1000


@dataclass(frozen=True)
class Selection:
    """What a bulk action acts on: explicit result ids (checked rows) or every result
    matching a query ("all N matching this filter"). Exactly one is set."""

    ids: tuple[int, ...] | None = None
    query: ResultQuery | None = None

    def __post_init__(self) -> None:
        if (self.ids is None) == (self.query is None):
            raise ValueError("a selection has either ids or a query")

    @property
    def is_all_matching(self) -> bool:
        return self.query is not None


def results_selected(*, run: Run, ids: Iterable[int]) -> list[int]:
    """The ids, sorted and without repeats, once every one is a result of `run`.

    Client ids are never trusted: an id of another run or project, or of nothing,
    refuses the whole request (ApplicationError on "ids") rather than acting on part of
    it; the message names the ids, and says nothing about what they belong to.
    """
    wanted = sorted(set(ids))
    if not wanted:
        raise ApplicationError(
            "Select at least one result.", field_errors={"ids": "No result selected."}
        )
    if len(wanted) > SELECTION_MAX_IDS:
        raise ApplicationError(
            f"At most {SELECTION_MAX_IDS} results can be named at once; select all "
            "results matching a filter instead.",
            field_errors={"ids": f"At most {SELECTION_MAX_IDS} ids."},
        )
    found = set(
        Result.objects.filter(run=run, pk__in=wanted).values_list("pk", flat=True)
    )
    foreign = [pk for pk in wanted if pk not in found]
    if foreign:
        shown = ", ".join(str(pk) for pk in foreign[:10])
        more = f" and {len(foreign) - 10} more" if len(foreign) > 10 else ""
        message = (
            f"{len(foreign)} of the selected results are not results of this run "
            f"({shown}{more}); nothing was changed."
        )
        raise ApplicationError(message, field_errors={"ids": message})
    return wanted


def selection_batches(
    *, run: Run, selection: Selection, user: User, size: int
) -> Iterator[list[int]]:
    """The selected result ids in ascending batches of at most `size`.

    All-matching selections walk the filter by primary key (keyset paging: `pk > the
    last id seen`), re-running the query per batch, so memory stays one batch whatever
    the run's size, and rows the action itself takes out of the filter (accepting
    "reviewed: no" results, say) neither shift later batches nor come back.
    """
    if selection.query is None:
        ids = results_selected(run=run, ids=selection.ids or ())
        for start in range(0, len(ids), size):
            yield ids[start : start + size]
        return
    matching = results_filter(run=run, query=selection.query, user=user).order_by("pk")
    last = 0
    while True:
        batch = list(matching.filter(pk__gt=last).values_list("pk", flat=True)[:size])
        if not batch:
            return
        yield batch
        last = batch[-1]


# The newest queues offered in the bulk bar's "add to a queue" choice.
BULK_QUEUE_CHOICES = 50


def bulk_assignees(*, project_id: int) -> list[str]:
    """Usernames the bulk bar can assign results to: the project's reviewers, owners
    and adjudicators (viewers cannot be given work)."""
    return list(
        get_user_model()
        .objects.filter(
            memberships__project_id=project_id, memberships__role__in=REVIEW_ROLES
        )
        .order_by("username")
        .values_list("username", flat=True)
    )


def bulk_queues(*, run: Run) -> list[ReviewQueue]:
    """The run's queues that results can be appended to (not stratified samples),
    newest first."""
    return list(
        ReviewQueue.objects.filter(run=run, stratified={}, archived=False)
        .only("pk", "name", "size")
        .order_by("-created_at", "-id")[:BULK_QUEUE_CHOICES]
    )
