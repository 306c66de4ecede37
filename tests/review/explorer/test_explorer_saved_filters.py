"""Saved explorer filters (services and selectors): each user's own, per project."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from evalsite.core.exceptions import ApplicationError
from evalsite.review.explorer.saved_filters import (
    saved_filter_create,
    saved_filter_delete,
)
from evalsite.review.explorer.saved_filters_selectors import (
    saved_filter_for_run,
    saved_filter_get_for_user,
    saved_filter_list,
)
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import SavedFilter
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.review.builders import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(project):
    return make_run(project, n_items=2, kinds=("faithfulness", "hallucination"))


def _save(project, user, name="Failing", **query):
    return saved_filter_create(
        project=project, user=user, name=name, query=ResultQuery(**query)
    )


def test_saved_filter_create_stores_the_explorer_query_string(project, reviewer):
    saved = _save(
        project,
        reviewer,
        name="  Failing, unreviewed ",
        passed=False,
        reviewed=False,
        sort="-score",
    )
    assert saved.name == "Failing, unreviewed"
    assert dict(parse_qsl(saved.query)) == {
        "final": "fail",
        "reviewed": "no",
        "sort": "-score",
    }
    assert saved.user == reviewer and saved.project == project


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "required"),
        ("   ", "required"),
        ("x" * 101, "At most 100"),
        ("bad\x00name", "NUL"),
    ],
)
def test_saved_filter_create_refuses_bad_names_on_the_name_field(
    project, reviewer, name, message
):
    with pytest.raises(ApplicationError) as info:
        _save(project, reviewer, name=name)
    assert message in info.value.field_errors["name"]
    assert not SavedFilter.objects.exists()


def test_saved_filter_names_are_unique_per_user_and_project_only(
    project, reviewer, owner
):
    _save(project, reviewer, name="Mine")
    with pytest.raises(ApplicationError) as info:
        _save(project, reviewer, name="Mine", passed=True)
    assert info.value.field_errors == {
        "name": "You already have a filter with this name."
    }
    # Another user, or another project of mine, may use the name.
    _save(project, owner, name="Mine")
    other = ProjectFactory()
    MembershipFactory(project=other, user=reviewer, role="reviewer")
    _save(other, reviewer, name="Mine")
    assert SavedFilter.objects.filter(name="Mine").count() == 3


def test_saved_filter_create_caps_filters_per_user(project, reviewer, monkeypatch):
    monkeypatch.setattr("evalsite.review.explorer.saved_filters.SAVED_FILTERS_MAX", 2)
    _save(project, reviewer, name="a")
    _save(project, reviewer, name="b")
    with pytest.raises(ApplicationError, match="delete one"):
        _save(project, reviewer, name="c")


def test_saved_filter_list_holds_only_my_filters_of_the_project(
    project, reviewer, owner
):
    mine = [_save(project, reviewer, name=n) for n in ("b", "a")]
    _save(project, owner, name="theirs")
    listed = list(saved_filter_list(project_id=project.pk, user=reviewer))
    assert listed == sorted(mine, key=lambda s: s.name)


def test_saved_filter_get_for_user_404s_another_users_or_projects_filter(
    project, reviewer, owner, outsider, viewer
):
    theirs = _save(project, owner, name="theirs")
    mine = _save(project, reviewer, name="mine")
    assert saved_filter_get_for_user(user=reviewer, pk=mine.pk) == mine
    with pytest.raises(Http404):
        saved_filter_get_for_user(user=reviewer, pk=theirs.pk)
    with pytest.raises(Http404):
        saved_filter_get_for_user(user=outsider, pk=mine.pk)
    other_project = outsider.memberships.get().project_id
    with pytest.raises(Http404):
        saved_filter_get_for_user(user=reviewer, pk=mine.pk, project_id=other_project)
    # A viewer is told about the role on a write, before the filter's owner.
    with pytest.raises(PermissionDenied):
        saved_filter_get_for_user(user=viewer, pk=mine.pk, write=True)


def test_saved_filter_delete(project, reviewer):
    saved = _save(project, reviewer)
    saved_filter_delete(saved=saved)
    assert not SavedFilter.objects.exists()


def test_saved_filter_for_run_keeps_the_scorer_on_its_own_run(project, reviewer, run):
    scorer = run.run_scorers.get(kind="hallucination")
    saved = _save(project, reviewer, run_scorer_id=scorer.pk, passed=False)
    query, notes = saved_filter_for_run(saved=saved, run=run)
    assert dict(parse_qsl(query)) == {"run_scorer": str(scorer.pk), "final": "fail"}
    assert notes == []


def test_saved_filter_for_run_maps_the_scorer_to_another_run_of_the_project(
    project, reviewer, run
):
    # Same scorer config (a rerun): the other run's run scorer made from it.
    rerun = make_run(project, n_items=1, kinds=("faithfulness", "hallucination"))
    first = run.run_scorers.get(kind="hallucination")
    second = rerun.run_scorers.get(kind="hallucination")
    second.scorer = first.scorer
    second.save()
    saved = _save(project, reviewer, run_scorer_id=first.pk)
    query, notes = saved_filter_for_run(saved=saved, run=rerun)
    assert dict(parse_qsl(query)) == {"run_scorer": str(second.pk)} and notes == []


def test_saved_filter_for_run_drops_a_scorer_the_run_lacks_with_a_note(
    project, reviewer, run
):
    elsewhere = make_run(project, n_items=1, kinds=("toxicity",))
    saved = _save(
        project, reviewer, run_scorer_id=run.run_scorers.first().pk, reviewed=False
    )
    query, notes = saved_filter_for_run(saved=saved, run=elsewhere)
    assert dict(parse_qsl(query)) == {"reviewed": "no"}
    assert notes == ["Its scorer is not one of this run's: showing every scorer."]


def test_saved_filter_create_refuses_another_projects_scorer(project, reviewer):
    theirs = make_run(ProjectFactory(), kinds=("toxicity",)).run_scorers.get()
    with pytest.raises(ApplicationError) as caught:
        _save(project, reviewer, run_scorer_id=theirs.pk)
    assert caught.value.field_errors == {
        "run_scorer_id": "No such scorer in this project."
    }
    assert not SavedFilter.objects.exists()


def test_saved_filter_for_run_never_maps_another_projects_scorer_by_name(
    project, reviewer, run
):
    """A filter stored before ids were checked may name another project's run
    scorer: it is dropped, not matched to this run's scorer of the same name."""
    theirs = make_run(ProjectFactory(), kinds=("hallucination",)).run_scorers.get()
    theirs.name = run.run_scorers.get(kind="hallucination").name
    theirs.save()
    saved = SavedFilter.objects.create(
        project=project, user=reviewer, name="old", query=f"run_scorer={theirs.pk}"
    )
    query, notes = saved_filter_for_run(saved=saved, run=run)
    assert query == ""
    assert notes == ["Its scorer is not one of this run's: showing every scorer."]


def test_saved_filter_with_a_query_that_no_longer_parses_opens_unfiltered(
    project, reviewer, run
):
    user = UserFactory()
    MembershipFactory(project=project, user=user, role="reviewer")
    saved = SavedFilter.objects.create(
        project=project, user=user, name="old", query="final=maybe"
    )
    assert saved_filter_for_run(saved=saved, run=run) == ("", [])
