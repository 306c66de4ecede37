"""Saving and deleting a user's explorer filters."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from evalsite.accounts.models import Project
from evalsite.core.exceptions import ApplicationError
from evalsite.evals.models import RunScorer
from evalsite.lib.text import text_check_storable
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import SavedFilter

NAME_MAX_LENGTH = 100
QUERY_MAX_LENGTH = 2000
# Per user and project: a list people choose from, not a store.
SAVED_FILTERS_MAX = 100


@transaction.atomic(durable=True)
def saved_filter_create(
    *, project: Project, user: User, name: str, query: ResultQuery
) -> SavedFilter:
    """Save `query` (filters and sort, in the explorer's spelling) under `name`.

    The name is stripped and must be 1–100 storable characters, unique among the
    user's filters of the project (a field error on "name" otherwise, also when a
    concurrent save wins the race to the unique constraint). A scorer filter must
    name a run scorer of this project (a field error on "run_scorer_id").
    """
    name = name.strip()
    text_check_storable(name, field="name")
    if not name:
        raise ApplicationError(
            "Name the filter.", field_errors={"name": "This field is required."}
        )
    if len(name) > NAME_MAX_LENGTH:
        raise ApplicationError(
            f"A filter name has at most {NAME_MAX_LENGTH} characters.",
            field_errors={"name": f"At most {NAME_MAX_LENGTH} characters."},
        )
    if (
        query.run_scorer_id is not None
        and not RunScorer.objects.filter(
            pk=query.run_scorer_id, run__project=project
        ).exists()
    ):
        # Another project's run scorer would be mapped by name on every run this
        # filter opens, confirming what that project calls its scorers.
        raise ApplicationError(
            "Its scorer is not one of this project's.",
            field_errors={"run_scorer_id": "No such scorer in this project."},
        )
    text = urlencode(query.to_querydict())
    if len(text) > QUERY_MAX_LENGTH:
        raise ApplicationError(
            "This filter is too long to save.",
            field_errors={"query": f"At most {QUERY_MAX_LENGTH} characters."},
        )
    mine = SavedFilter.objects.filter(project=project, user=user)
    if mine.filter(name=name).exists():
        raise _duplicate(name)
    if mine.count() >= SAVED_FILTERS_MAX:
        raise ApplicationError(
            f"You have {SAVED_FILTERS_MAX} saved filters in this project; delete one "
            "first.",
            field_errors={"name": f"At most {SAVED_FILTERS_MAX} saved filters."},
        )
    try:
        with transaction.atomic():
            return SavedFilter.objects.create(
                project=project, user=user, name=name, query=text
            )
    except IntegrityError:
        raise _duplicate(name) from None


def _duplicate(name: str) -> ApplicationError:
    return ApplicationError(
        f"You already have a filter named “{name}”.",
        field_errors={"name": "You already have a filter with this name."},
    )


@transaction.atomic(durable=True)
def saved_filter_delete(*, saved: SavedFilter) -> None:
    """Delete a saved filter (found with saved_filter_get_for_user(write=True))."""
    saved.delete()
