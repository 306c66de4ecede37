"""Judge versions: recorded at run start and on every judged result, numbered per
project and kind; lab and audit runs stay out of every list of runs."""

from __future__ import annotations

import pytest

from evalsite.evals.judges.versions import (
    judge_version_for,
    judge_version_get_or_create,
)
from evalsite.evals.models import JudgeVersion, Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.runs.selectors import run_list, runs_listed
from evalsite.evals.scorers.services import scorer_create
from scoring.judge_version import judge_digest, judge_spec
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def _scorer(project, owner, judge, name, **options):
    return scorer_create(
        project=project,
        user=owner,
        name=name,
        kind="faithfulness",
        judge=judge,
        options=options or None,
    )


def _run(project, owner, dataset, scorers, capture, **kwargs):
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers, **kwargs
        )
    run.refresh_from_db()
    return run


def test_runs_record_their_judge_version_on_scorers_and_results(
    project, owner, dataset, judge, django_capture_on_commit_callbacks
):
    plain = _scorer(project, owner, judge, "Plain")
    strict = _scorer(
        project, owner, judge, "Strict", rubric="Count hedges as unsupported."
    )
    same_as_plain = _scorer(project, owner, judge, "Plain again")
    first = _run(project, owner, dataset, [plain], django_capture_on_commit_callbacks)
    second = _run(project, owner, dataset, [strict], django_capture_on_commit_callbacks)
    third = _run(
        project, owner, dataset, [same_as_plain], django_capture_on_commit_callbacks
    )
    v_first = first.run_scorers.get().judge_version
    v_second = second.run_scorers.get().judge_version
    v_third = third.run_scorers.get().judge_version
    # Same configuration (another scorer, another run): the same version.
    assert v_first == v_third
    # Another rubric: a new version, numbered next.
    assert v_first != v_second
    assert (v_first.number, v_second.number) == (1, 2)
    assert v_first.label == "faithfulness v1 · offline-judge"
    assert v_second.label == "faithfulness v2 · offline-judge · rubric"
    assert v_second.spec["rubric"] == "Count hedges as unsupported."
    assert v_first.digest == judge_digest(
        judge_spec("faithfulness", plain.options, "offline-judge", {"temperature": 0.0})
    )
    assert v_first.created_by == owner
    # Every judged result records the version it was made with.
    for run, version in ((first, v_first), (second, v_second)):
        results = Result.objects.filter(run=run)
        assert results.count() == 3
        assert all(r.status == Result.Status.OK for r in results)
        assert {r.judge_version_id for r in results} == {version.pk}


def test_kinds_without_a_judge_have_no_version(
    project, owner, dataset, scorers, django_capture_on_commit_callbacks
):
    run = _run(project, owner, dataset, scorers, django_capture_on_commit_callbacks)
    similarity = run.run_scorers.get(kind="content_similarity")
    assert similarity.judge_version is None
    assert not Result.objects.filter(
        run_scorer=similarity, judge_version__isnull=False
    ).exists()
    assert run.run_scorers.get(kind="faithfulness").judge_version is not None


def test_versions_are_numbered_per_project_and_kind(project, owner):
    spec = judge_spec("faithfulness", {}, "m", {"temperature": 0.0})
    other = ProjectFactory()
    mine = judge_version_get_or_create(project=project, spec=spec, user=owner)
    theirs = judge_version_get_or_create(project=other, spec=spec)
    halluc = judge_version_get_or_create(
        project=project, spec=judge_spec("hallucination", {}, "m", None)
    )
    assert (mine.number, theirs.number, halluc.number) == (1, 1, 1)
    assert judge_version_get_or_create(project=project, spec=spec) == mine
    assert JudgeVersion.objects.filter(project=project).count() == 2


def test_a_run_scorer_keeps_the_version_it_started_with(project, owner, dataset, judge):
    scorer = _scorer(project, owner, judge, "F")
    run = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=[scorer], enqueue=False
    )
    run_scorer = run.run_scorers.get()
    started = run_scorer.judge_version
    # A later what-if rescore changes formula options only; the judge stays.
    run_scorer.options = {**run_scorer.options, "threshold": 0.9}
    run_scorer.save(update_fields=["options"])
    assert judge_version_for(run_scorer) == started


def test_repeat_at_temperature_zero_cannot_start(project, owner, dataset, judge):
    scorer = _scorer(project, owner, judge, "F")
    with pytest.raises(Exception, match="temperature above 0"):
        run_services.run_start(
            project=project,
            user=owner,
            dataset=dataset,
            scorers=[scorer],
            scorer_options={scorer.pk: {"repeat": 3}},
            enqueue=False,
        )
    assert not Run.objects.filter(project=project).exists()


def test_lab_and_audit_runs_are_left_out_of_the_runs_lists(
    project, owner, dataset, judge
):
    scorer = _scorer(project, owner, judge, "F")
    item = dataset.items.order_by("pk").first()
    listed = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=[scorer], enqueue=False
    )
    lab = run_services.run_start(
        project=project,
        user=owner,
        dataset=dataset,
        scorers=[scorer],
        purpose=Run.Purpose.LAB,
        item_ids=[item.pk],
        scorer_options={scorer.pk: {"rubric": "Be strict."}},
        enqueue=False,
    )
    audit = run_services.run_start(
        project=project,
        user=owner,
        dataset=dataset,
        scorers=[scorer],
        purpose=Run.Purpose.AUDIT,
        enqueue=False,
    )
    assert list(run_list(project_id=project.pk)) == [listed]
    assert set(runs_listed()) == {listed}
    # The lab run judged only the chosen item, with the candidate's options.
    assert lab.total == 1
    assert lab.run_scorers.get().options["rubric"] == "Be strict."
    assert lab.run_scorers.get().judge_version != listed.run_scorers.get().judge_version
    assert audit.total == 3
    with pytest.raises(Exception, match="Unknown run purpose"):
        run_services.run_start(
            project=project,
            user=owner,
            dataset=dataset,
            scorers=[scorer],
            purpose="other",
            enqueue=False,
        )


def test_the_project_pages_list_only_real_runs(
    owner_client, project, owner, dataset, judge
):
    scorer = _scorer(project, owner, judge, "F")
    run_services.run_start(
        project=project,
        user=owner,
        dataset=dataset,
        scorers=[scorer],
        name="visible run",
        enqueue=False,
    )
    run_services.run_start(
        project=project,
        user=owner,
        dataset=dataset,
        scorers=[scorer],
        name="hidden lab replay",
        purpose=Run.Purpose.LAB,
        enqueue=False,
    )
    from django.urls import reverse

    for url in (
        reverse("evals:runs", args=[project.pk]),
        f"/api/projects/{project.pk}/runs",
    ):
        body = owner_client.get(url).content.decode()
        assert "visible run" in body
        assert "hidden lab replay" not in body
