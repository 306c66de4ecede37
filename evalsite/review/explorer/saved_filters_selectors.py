"""Saved explorer filters: each user's own, per project."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from django.db.models import QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.evals.models import Run, RunScorer
from evalsite.review.explorer.schemas import ResultQuery, ResultQueryError
from evalsite.review.explorer.selectors import User
from evalsite.review.models import SavedFilter


def saved_filter_get_for_user(
    *, user: User, pk: int, write: bool = False, project_id: int | None = None
) -> SavedFilter:
    """The user's own saved filter. 404 for a filter of another user or project (or
    none), 403 when `write` and the role may not change anything (the project is
    checked before the owner, so a viewer is told about the role, not the filter)."""
    saved = SavedFilter.objects.filter(pk=pk).first()
    if saved is None or (project_id is not None and saved.project_id != project_id):
        raise Http404("No such saved filter.")
    saved.project = project_get_for_user(user=user, pk=saved.project_id, write=write)
    if saved.user_id != user.pk:
        raise Http404("No such saved filter.")
    return saved


def saved_filter_list(*, project_id: int, user: User) -> QuerySet[SavedFilter]:
    """The user's saved filters of one project, by name (nobody else's are listed)."""
    if not user.is_authenticated:
        return SavedFilter.objects.none()
    return SavedFilter.objects.filter(project_id=project_id, user_id=user.pk).order_by(
        "name", "id"
    )


def saved_filter_query(*, saved: SavedFilter) -> ResultQuery:
    """The stored query string parsed (it was checked when saved)."""
    try:
        return ResultQuery.from_querydict(dict(parse_qsl(saved.query)))
    except ResultQueryError:
        # Saved under rules that have since changed: it still opens, unfiltered
        # where it no longer parses, rather than failing.
        return ResultQuery()


def saved_filter_for_run(*, saved: SavedFilter, run: Run) -> tuple[str, list[str]]:
    """The explorer query string of `saved` for `run`, and notes on what changed.

    A filter is saved once per project but a scorer filter names a run scorer, which
    belongs to one run: on another run it becomes that run's scorer made from the same
    scorer config (else of the same name), and is dropped with a note when there is
    none.
    """
    query = saved_filter_query(saved=saved)
    notes: list[str] = []
    if query.run_scorer_id is not None:
        scorers = list(run.run_scorers.all())
        if all(rs.pk != query.run_scorer_id for rs in scorers):
            mapped = _same_scorer(query.run_scorer_id, scorers, run=run)
            if mapped is None:
                notes.append(
                    "Its scorer is not one of this run's: showing every scorer."
                )
            query = query.model_copy(update={"run_scorer_id": mapped})
    return urlencode(query.to_querydict()), notes


def _same_scorer(
    run_scorer_id: int, scorers: list[RunScorer], *, run: Run
) -> int | None:
    # Only within the run's project: a filter saved before ids were checked may name
    # another project's run scorer, whose name must not be matched (nor confirmed).
    saved = (
        RunScorer.objects.filter(pk=run_scorer_id, run__project_id=run.project_id)
        .values("scorer_id", "name")
        .first()
    )
    if saved is None:
        return None
    for key in ("scorer_id", "name"):
        for rs in scorers:
            if saved[key] is not None and getattr(rs, key) == saved[key]:
                return rs.pk
    return None
