"""Re-judge: a new run with each scorer's current judge version; the old run's results
are never touched; owners only; compare warns when the judges differ."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.evals.models import Result, Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers.services import scorer_create, scorer_update
from tests.conftest import bearer, login
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(project, owner, dataset, judge, django_capture_on_commit_callbacks):
    scorer = scorer_create(
        project=project, user=owner, name="Faith", kind="faithfulness", judge=judge
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=[scorer], name="base"
        )
    run.refresh_from_db()
    return run, scorer


def _snapshot(run):
    return sorted(
        Result.objects.filter(run=run).values_list(
            "pk", "judge_score", "judge_passed", "judge_version_id", "reason"
        )
    )


def test_rejudge_makes_a_new_run_with_the_current_judge_and_keeps_the_old(
    project, owner, judged, django_capture_on_commit_callbacks, client
):
    run, scorer = judged
    before = _snapshot(run)
    old_version = run.run_scorers.get().judge_version
    # The lead edits the scorer's rubric after the run: a new scorer version.
    scorer_update(
        scorer=scorer,
        user=owner,
        options={**scorer.options, "rubric": "Treat hedged claims as unsupported."},
    )
    login(client, owner)
    url = reverse("evals:run_rejudge", args=[project.pk, run.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url)
    new = Run.objects.get(rejudge_of=run)
    assert response.status_code == 302
    assert response.url == reverse("evals:run_detail", args=[project.pk, new.pk])
    assert new.name == "base (re-judged)"
    assert new.purpose == Run.Purpose.RUN
    assert new.dataset_id == run.dataset_id
    new.refresh_from_db()
    assert new.status == Run.Status.DONE
    new_version = new.run_scorers.get().judge_version
    assert new_version != old_version
    assert new_version.number == old_version.number + 1
    assert new_version.spec["rubric"] == "Treat hedged claims as unsupported."
    assert set(
        Result.objects.filter(run=new).values_list("judge_version_id", flat=True)
    ) == {new_version.pk}
    # The old run's results are exactly as they were.
    assert _snapshot(run) == before
    event = AuditEvent.objects.get(action="run.rejudge")
    assert event.after["rejudge_of"] == run.pk
    assert "re-judged" in event.summary
    # Both run pages say how they are linked, with the judge versions.
    page = client.get(reverse("evals:run_detail", args=[project.pk, new.pk]))
    body = page.content.decode()
    assert "Re-judged from" in body and new_version.label in body
    body = client.get(reverse("evals:run_detail", args=[project.pk, run.pk])).content
    assert b"Re-judged as" in body and old_version.label.encode() in body


def test_rejudge_with_an_unchanged_scorer_records_the_same_version(
    owner, judged, django_capture_on_commit_callbacks
):
    run, _ = judged
    with django_capture_on_commit_callbacks(execute=True):
        new = run_services.run_rejudge(run=run, user=owner)
    assert new.run_scorers.get().judge_version == run.run_scorers.get().judge_version


def test_rejudge_over_the_api(client, project, owner, judged):
    run, _ = judged
    response = client.post(f"/api/runs/{run.pk}/rejudge", **bearer(owner))
    assert response.status_code == 202, response.content
    body = response.json()
    new = Run.objects.get(pk=body["id"])
    assert new.rejudge_of_id == run.pk
    detail = client.get(f"/api/runs/{new.pk}", **bearer(owner)).json()
    assert detail["rejudge_of_id"] == run.pk
    assert detail["scorers"][0]["judge_version"]["label"].startswith("faithfulness v1")


def test_only_owners_rejudge(client, project, reviewer, viewer, judged):
    run, _ = judged
    url = reverse("evals:run_rejudge", args=[project.pk, run.pk])
    for user in (reviewer, viewer):
        login(client, user)
        assert client.post(url).status_code == 403
        response = client.post(f"/api/runs/{run.pk}/rejudge", **bearer(user))
        assert response.status_code == 403
        page = client.get(reverse("evals:run_detail", args=[project.pk, run.pk]))
        assert b'id="run-rejudge"' not in page.content
    assert not Run.objects.filter(rejudge_of=run).exists()


def test_another_projects_run_is_404(client, outsider, judged, project):
    run, _ = judged
    own = ProjectFactory()
    login(client, outsider)
    for url in (
        reverse("evals:run_rejudge", args=[project.pk, run.pk]),
        reverse(
            "evals:run_rejudge", args=[outsider.memberships.get().project_id, run.pk]
        ),
    ):
        assert client.post(url).status_code == 404
    assert (
        client.post(f"/api/runs/{run.pk}/rejudge", **bearer(outsider)).status_code
        == 404
    )
    assert own.pk and not Run.objects.filter(rejudge_of=run).exists()


def test_a_running_or_lab_run_is_not_rejudged(project, owner, dataset, judge):
    scorer = scorer_create(
        project=project, user=owner, name="F", kind="faithfulness", judge=judge
    )
    queued = run_services.run_start(
        project=project, user=owner, dataset=dataset, scorers=[scorer], enqueue=False
    )
    with pytest.raises(Exception, match="Wait until the run has finished"):
        run_services.run_rejudge(run=queued, user=owner)
    lab = run_services.run_start(
        project=project,
        user=owner,
        dataset=dataset,
        scorers=[scorer],
        purpose=Run.Purpose.LAB,
        enqueue=False,
    )
    Run.objects.filter(pk=lab.pk).update(status=Run.Status.DONE)
    lab.refresh_from_db()
    with pytest.raises(Exception, match="Only a run can be re-judged"):
        run_services.run_rejudge(run=lab, user=owner)


def test_compare_warns_when_the_judges_differ(
    client, project, owner, judged, django_capture_on_commit_callbacks
):
    run, scorer = judged
    scorer_update(
        scorer=scorer, user=owner, options={**scorer.options, "rubric": "Be strict."}
    )
    with django_capture_on_commit_callbacks(execute=True):
        rejudged = run_services.run_rejudge(run=run, user=owner)
    rejudged.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        same = run_services.run_rejudge(run=rejudged, user=owner)
    login(client, owner)
    compare = reverse("compare:compare", args=[project.pk])
    differ = client.get(f"{compare}?a={run.pk}&b={rejudged.pk}").content.decode()

    assert "the judges differ" in differ
    assert "faithfulness v1 · offline-judge" in differ
    assert "faithfulness v2 · offline-judge · rubric" in differ
    alike = client.get(f"{compare}?a={rejudged.pk}&b={same.pk}").content.decode()
    assert "the judges differ" not in alike
    api = client.get(
        f"/api/runs/{run.pk}/compare/{rejudged.pk}", **bearer(owner)
    ).json()
    pair = api["pairs"][0] if "pairs" in api else api["candidates"][0]["pairs"][0]
    assert pair["judge_versions_differ"] is True
    assert pair["a_judge_version"] == "faithfulness v1 · offline-judge"
