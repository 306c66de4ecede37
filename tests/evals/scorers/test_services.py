"""Scorer services: options, versions."""

from __future__ import annotations

import pytest

from evalsite.core.exceptions import ApplicationError
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import ScorerConfig
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def _start(project, owner, dataset, scorers, capture):
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    run.refresh_from_db()
    return run


def test_scorer_create_merges_defaults_and_threshold(project, owner, judge):
    scorer = scorer_services.scorer_create(
        project=project,
        user=owner,
        name="CR",
        kind="context_relevance",
        judge=judge,
        options={"penalties": {"unused_high_relevance": 0}},
        threshold=0.7,
    )
    assert scorer.options["threshold"] == 0.7
    assert scorer.options["penalties"] == {
        "unused_high_relevance": 0,
        "missing_context_per_item": 0.15,
        "max_missing_context_penalty": 0.5,
    }


def test_scorer_create_names_the_bad_option(project, owner, judge):
    with pytest.raises(ApplicationError) as exc:
        scorer_services.scorer_create(
            project=project,
            user=owner,
            name="CR",
            kind="context_relevance",
            judge=judge,
            options={"penalties": {"unused_high_relevance": 2}},
        )
    assert list(exc.value.field_errors) == ["options.penalties.unused_high_relevance"]


def test_scorer_create_requires_a_judge_only_for_llm_kinds(project, owner):
    with pytest.raises(ApplicationError) as exc:
        scorer_services.scorer_create(
            project=project, user=owner, name="F", kind="faithfulness"
        )
    assert "judge_id" in exc.value.field_errors
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="S", kind="content_similarity"
    )
    assert scorer.judge is None


def test_scorer_create_refuses_a_judge_of_another_project(project, owner):
    other = judge_services.judge_create_offline(ProjectFactory())
    with pytest.raises(ApplicationError) as exc:
        scorer_services.scorer_create(
            project=project, user=owner, name="F", kind="faithfulness", judge=other
        )
    assert "judge_id" in exc.value.field_errors


def test_scorer_update_edits_in_place_while_unused(project, owner, scorers):
    scorer = scorers[0]
    saved = scorer_services.scorer_update(scorer=scorer, user=owner, threshold=0.9)
    assert saved.pk == scorer.pk
    assert saved.options["threshold"] == 0.9


def test_scorer_update_makes_a_new_version_once_a_run_used_it(
    project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    run = _start(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    old = scorers[0]
    new = scorer_services.scorer_update(scorer=old, user=owner, threshold=0.9)
    old.refresh_from_db()
    assert (new.version, new.parent_id, old.archived) == (2, old.pk, True)
    snapshot = run.run_scorers.get(scorer=old)
    assert snapshot.options["threshold"] == 0.5
    with pytest.raises(ApplicationError, match="old version"):
        scorer_services.scorer_update(scorer=old, user=owner, threshold=0.1)


def test_scorer_version_create_from_run_numbers_after_every_version_and_archives_them(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers, enqueue=False
    )
    old = scorers[0]
    edited = scorer_services.scorer_update(scorer=old, user=owner, threshold=0.9)  # v2
    snapshot = run.run_scorers.get(scorer=old)  # the run ran v1
    options = {**snapshot.options, "threshold": 0.7}
    saved = scorer_services.scorer_version_create_from_run(
        run_scorer=snapshot, options=options, user=owner
    )
    edited.refresh_from_db()
    assert (saved.version, saved.parent_id, saved.name) == (3, old.pk, old.name)
    assert saved.options["threshold"] == 0.7
    assert edited.archived
    live = ScorerConfig.objects.filter(project=project, name=old.name, archived=False)
    assert list(live) == [saved]


def test_scorer_version_create_from_run_stands_in_the_snapshot_for_a_deleted_scorer(
    project, owner, dataset, scorers
):
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=scorers[:1], enqueue=False
    )
    snapshot = run.run_scorers.get()
    scorers[0].delete()
    snapshot.refresh_from_db()
    saved = scorer_services.scorer_version_create_from_run(
        run_scorer=snapshot, options=snapshot.options, user=owner
    )
    assert (saved.version, saved.parent_id) == (1, None)
    assert (saved.name, saved.kind, saved.judge_id) == (
        snapshot.name,
        snapshot.kind,
        snapshot.judge_id,
    )


def test_kinds_that_need_agent_data_are_offered_now_datasets_hold_it(project, owner):
    """tool_call_accuracy reads an item's tool calls, which datasets hold
    part 2 (evalsite.datasets.agentdata): offered like every kind whose fields items
    hold; a kind the library does not know is still refused."""
    from evalsite.evals.scorers.forms import ScorerForm
    from evalsite.evals.scorers.services import SCORER_KINDS, scorer_create

    assert {"tool_call_accuracy", "trajectory_accuracy", "faithfulness"} <= set(
        SCORER_KINDS
    )
    form = ScorerForm(project_id=project.pk, kind="faithfulness")
    assert "tool_call_accuracy" in dict(form.fields["kind"].choices)
    scorer = scorer_create(
        project=project, user=owner, name="t", kind="tool_call_accuracy"
    )
    assert scorer.options["expected_tool_order"] is None
    with pytest.raises(ApplicationError, match="Unknown scorer kind"):
        scorer_create(project=project, user=owner, name="t", kind="no_such_kind")
