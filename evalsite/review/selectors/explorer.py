"""Result filtering and paging for the results explorer.

`results_filter` is the one place result filtering lives: the explorer page, the
results API, queue building and the exports all parse their parameters into one
`review.schemas.ResultQuery` and call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db.models import F, QuerySet

from evalsite.datasets.selectors import items_matching
from evalsite.evals.models import Result, Run
from evalsite.lib.text import text_check_storable

if TYPE_CHECKING:
    # schemas builds ResultQuery on this module's SORTS; only the type comes back.
    from evalsite.review.schemas import ResultQuery

User = AuthUser | AnonymousUser


# Sort key -> ORDER BY, on Result columns only so an index can serve it without a join.
# "item" orders by item id: a dataset's items are inserted in file order in one
# transaction (datasets.services._insert_items), so item ids increase with the index,
# and the unique (run, item, run_scorer) index answers it with no sort at all (it leads
# with run_id: see RUN_RANGE_SORTS). Every ordering ends in a unique column so pages
# never overlap.
SORTS: dict[str, tuple[Any, ...]] = {
    "item": ("run_id", "item_id", "run_scorer_id"),
    "-item": ("-run_id", "-item_id", "-run_scorer_id"),
    "score": (F("judge_score").asc(nulls_last=True), "id"),
    "-score": (F("judge_score").desc(nulls_last=True), "id"),
    "final": (F("final_score").asc(nulls_last=True), "id"),
    "-final": (F("final_score").desc(nulls_last=True), "id"),
    "updated": ("updated_at", "id"),
    "-updated": ("-updated_at", "-id"),
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


def results_filter(*, run: Run, query: ResultQuery, user: User) -> QuerySet[Result]:
    """The run's results matching `query`, sorted, with the columns the lists show.

    Filters map onto indexed columns of Result (run, run_scorer, status, final_passed,
    assignee); text search matches the item's input and output, through one trigram
    index on Postgres (datasets.selectors.ItemSearchText).
    """
    sort = query.sort if query.sort in SORTS else DEFAULT_SORT
    if sort in RUN_RANGE_SORTS:
        qs = Result.objects.filter(run_id__gte=run.pk, run_id__lte=run.pk)
    else:
        qs = Result.objects.filter(run=run)
    if query.scorer_id is not None:
        qs = qs.filter(run_scorer_id=query.scorer_id)
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
        # index (review_result_overridden_idx) instead of a scan of the run.
        qs = qs.filter(overridden=True)
    text = (query.q or "").strip()
    if text:
        # Postgres refuses NUL even as a query parameter: a 400, not a server error.
        text_check_storable(text, field="q")
        # A semi-join on the run's dataset: one scan of its items, not one per result.
        matching = items_matching(dataset_id=run.dataset_id, text=text)
        qs = qs.filter(item_id__in=matching.values("id"))
    return qs.select_related("item", "run_scorer", "assignee").order_by(*SORTS[sort])


def results_page(qs: QuerySet[Result], *, offset: int, limit: int) -> list[Result]:
    """One page of `qs`: the ids first (sorted on Result's own indexed columns, no
    joins), then those rows with their item, scorer and assignee. Joining before the
    LIMIT would make the database join every matching row of a 100k-result run."""
    ids = list(qs.values_list("id", flat=True)[offset : offset + limit])
    rows = qs.model.objects.filter(id__in=ids).select_related(
        "item", "run_scorer", "assignee"
    )
    by_id = {row.pk: row for row in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


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
