"""Reads of scorers: user-scoped lookup and lists."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404

from evalsite.accounts.selectors import project_get_for_user
from evalsite.evals.models import ScorerConfig

AnyUser = User | AnonymousUser


def scorer_get_for_user(
    *, user: AnyUser, pk: int, write: bool = False, project_id: int | None = None
) -> ScorerConfig:
    scorer = ScorerConfig.objects.select_related("judge").filter(pk=pk).first()
    if scorer is None or (project_id is not None and scorer.project_id != project_id):
        raise Http404("No such scorer.")
    scorer.project = project_get_for_user(user=user, pk=scorer.project_id, write=write)
    return scorer


def scorer_list(
    *, project_id: int, archived: bool = False, include_archived: bool = False
) -> QuerySet[ScorerConfig]:
    """The project's current scorers; with `archived`, the archived ones only (not the
    old versions an edit replaced); with `include_archived`, every version."""
    qs = ScorerConfig.objects.filter(project_id=project_id).select_related("judge")
    if archived:
        newer = ScorerConfig.objects.filter(parent_id=OuterRef("pk"))
        qs = qs.filter(archived=True).exclude(Exists(newer))
    elif not include_archived:
        qs = qs.filter(archived=False)
    return qs.order_by("name", "-version", "pk")


def scorers_in_project(*, project_id: int, ids: list[int]) -> list[ScorerConfig]:
    """The scorers with these ids in this project, in the given order; Http404 if any
    is missing (outsiders learn nothing about other projects' ids)."""
    found = {
        s.pk: s
        for s in ScorerConfig.objects.select_related("judge").filter(
            project_id=project_id, pk__in=ids
        )
    }
    missing = [i for i in ids if i not in found]
    if missing:
        raise Http404(f"No such scorer: {missing[0]}.")
    return [found[i] for i in ids]
