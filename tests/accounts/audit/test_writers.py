"""Every service that changes something a team cares about writes one event of the
project's audit log: who, what, the summary and before/after."""

from __future__ import annotations

import json

import pytest

from evalsite.accounts.models import AuditEvent, Role
from evalsite.accounts.services import membership_set
from evalsite.core.exceptions import ConflictError
from evalsite.datasets.services import dataset_create
from evalsite.evals.judges import services as judge_services
from evalsite.evals.models import Run
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers import services as scorer_services
from tests.datasets.conftest import upload
from tests.factories import (
    DatasetFactory,
    JudgeConnectionFactory,
    ResultFactory,
    RunFactory,
    RunScorerFactory,
    ScorerConfigFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

SECRET = "sk-live-0123456789abcdefSECRET"


def _only(action: str) -> AuditEvent:
    return AuditEvent.objects.get(action=action)


def _text(event: AuditEvent) -> str:
    """Everything the event holds, as the page, API and export could show it."""
    return json.dumps(
        [event.summary, event.object_label, event.before, event.after], default=str
    )


# --------------------------------------------------------------------------- runs


def test_run_start_records_the_run_dataset_and_scorers(project, owner):
    dataset = DatasetFactory(
        project=project,
        name="support",
        rows=[{"input": "q", "output": "a", "reference": "a"}],
    )
    scorer = ScorerConfigFactory(project=project, kind="content_similarity")
    run = run_services.run_start(
        project=project,
        user=owner,
        dataset=dataset,
        scorers=[scorer],
        name="nightly",
        enqueue=False,
    )
    event = _only("run.start")
    assert (event.project, event.actor, event.run_id) == (project, owner, run.pk)
    assert (event.object_type, event.object_id, event.object_label) == (
        "run",
        run.pk,
        "nightly",
    )
    assert event.summary.startswith("olivia started run “nightly”")
    run_scorer = run.run_scorers.select_related("judge_version").get()
    version = run_scorer.judge_version
    assert event.after == {
        "dataset_id": dataset.pk,
        "scorer_ids": [scorer.pk],
        "total": run.total,
        "purpose": "run",
        "rejudge_of": None,
        "judge_versions": {run_scorer.name: version.label} if version else {},
    }


def test_run_cancel_records_the_status_change(project, owner):
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    run_services.run_cancel(run=run, user=owner)
    event = _only("run.cancel")
    assert (event.actor, event.run_id, event.object_id) == (owner, run.pk, run.pk)
    assert event.before == {"status": "running"}
    assert event.after == {"status": "cancelled", "cancelled": 0}


def test_a_refused_cancel_records_nothing(project, owner):
    run = RunFactory(project=project, status=Run.Status.DONE)
    with pytest.raises(ConflictError):
        run_services.run_cancel(run=run, user=owner)
    assert not AuditEvent.objects.exists()


def test_run_retry_records_how_many_results_went_back(project, owner):
    run = RunFactory(project=project, status=Run.Status.DONE)
    run_scorer = RunScorerFactory(run=run)
    ResultFactory(run=run, run_scorer=run_scorer, status="error")
    run_services.run_retry_failed(run=run, user=owner)
    event = _only("run.retry")
    assert (event.actor, event.run_id, event.after) == (owner, run.pk, {"retried": 1})


def test_run_delete_is_recorded_and_the_event_outlives_the_run(project, owner):
    run = RunFactory(project=project, name="old", status=Run.Status.DONE)
    ResultFactory(run=run)
    run_id = run.pk
    run_services.run_delete(run=run, user=owner)
    assert not Run.objects.filter(pk=run_id).exists()
    event = _only("run.delete")
    assert (event.actor, event.run_id, event.object_label) == (owner, run_id, "old")
    assert event.summary == f"olivia deleted run “old” (#{run_id}) (0 results)"
    assert event.before["status"] == "done"


def test_events_about_a_run_survive_its_deletion(project, owner):
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    result = ResultFactory(run=run)
    run_services.run_cancel(run=run, user=owner)
    run_services.run_delete(run=run, user=owner)
    assert list(
        AuditEvent.objects.filter(run_id=run.pk)
        .order_by("id")
        .values_list("action", flat=True)
    ) == ["run.cancel", "run.delete"]
    assert result.pk  # its results went with it; their ids stay in the events


def test_an_active_run_cannot_be_deleted(project, owner):
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    with pytest.raises(ConflictError):
        run_services.run_delete(run=run, user=owner)
    assert Run.objects.filter(pk=run.pk).exists()
    assert not AuditEvent.objects.exists()


# --------------------------------------------------------------------------- judges


def test_judge_create_records_its_settings_but_not_the_key(project, owner):
    judge = judge_services.judge_create(
        project=project,
        user=owner,
        name="gpt",
        base_url="http://127.0.0.1:9/v1",
        model="gpt-4o",
        api_key=SECRET,
        price_per_1k_input="0.5",
    )
    event = _only("judge.create")
    assert (event.actor, event.object_type, event.object_id) == (
        owner,
        "judge",
        judge.pk,
    )
    assert event.after["model"] == "gpt-4o"
    assert event.after["price_per_1k_input"] == "0.5"
    assert event.after["api_key"] == "set"
    assert SECRET not in _text(event)
    assert judge.api_key_encrypted not in _text(event)


def test_judge_change_names_the_fields_and_never_the_key(project, owner):
    judge = JudgeConnectionFactory(project=project, name="gpt", api_key="sk-old-KEY")
    old_cipher = judge.api_key_encrypted
    judge_services.judge_update(
        judge=judge, user=owner, model="gpt-4.1", api_key=SECRET
    )
    event = _only("judge.change")
    assert event.summary == "olivia changed judge “gpt”: model, api_key changed"
    assert event.before == {"model": "gpt-4o-mini"}
    assert event.after == {"model": "gpt-4.1", "api_key": "changed"}
    row = json.dumps(
        list(AuditEvent.objects.filter(pk=event.pk).values().get().values()),
        default=str,
    )
    for secret in (SECRET, "sk-old-KEY", old_cipher, judge.api_key_encrypted):
        assert secret not in row


def test_judge_key_removal_and_env_var_are_words_only(project, owner):
    judge = JudgeConnectionFactory(project=project, api_key="sk-old-KEY")
    judge_services.judge_update(judge=judge, user=owner, clear_api_key=True)
    assert _only("judge.change").after == {"api_key": "removed"}


def test_a_judge_save_that_changes_nothing_records_nothing(project, owner):
    judge = JudgeConnectionFactory(project=project)
    judge_services.judge_update(judge=judge, user=owner, model=judge.model)
    assert not AuditEvent.objects.exists()


def test_judge_test_records_the_outcome(project, owner):
    judge = JudgeConnectionFactory(project=project, name="nowhere")
    outcome = judge_services.judge_test(judge=judge, user=owner)
    event = _only("judge.test")
    assert (event.actor, event.object_id) == (owner, judge.pk)
    assert event.after["ok"] is outcome.ok is False
    assert event.after["message"] == outcome.message
    assert event.summary == "olivia tested judge “nowhere”: failed"


# --------------------------------------------------------------------------- scorers


def test_scorer_create_records_its_settings(project, owner):
    scorer = scorer_services.scorer_create(
        project=project, user=owner, name="Sim", kind="content_similarity"
    )
    event = _only("scorer.create")
    assert (event.actor, event.object_type, event.object_id) == (
        owner,
        "scorer",
        scorer.pk,
    )
    assert event.after["kind"] == "content_similarity"
    assert event.after["options"] == scorer.options


def test_scorer_edit_records_the_changed_fields(project, owner):
    scorer = ScorerConfigFactory(project=project, kind="content_similarity", name="A")
    scorer_services.scorer_update(scorer=scorer, user=owner, name="B")
    event = _only("scorer.change")
    assert (event.before, event.after) == ({"name": "A"}, {"name": "B"})
    assert event.summary == "olivia changed scorer “B”: name"


def test_editing_a_scorer_a_run_used_records_a_new_version(project, owner):
    scorer = ScorerConfigFactory(project=project, kind="content_similarity", name="A")
    RunScorerFactory(run=RunFactory(project=project), scorer=scorer)
    new = scorer_services.scorer_update(scorer=scorer, user=owner, name="A")
    event = _only("scorer.version")
    assert (event.object_id, event.before["version"], event.after["version"]) == (
        new.pk,
        1,
        2,
    )
    assert event.summary == "olivia saved version 2 of scorer “A”"


# --------------------------------------------------------------------------- datasets


def test_dataset_upload_and_new_version_are_recorded(project, owner):
    data = "input,output\nq,a\nq2,a2\n"
    first = dataset_create(
        project=project, user=owner, file=upload("d.csv", data), name="d"
    )
    second = dataset_create(
        project=project, user=owner, file=upload("d2.csv", data), name="d"
    )
    upload_event, version_event = _only("dataset.upload"), _only("dataset.version")
    assert (upload_event.object_id, upload_event.actor) == (first.pk, owner)
    assert upload_event.after == {
        "version": 1,
        "items": 2,
        "file": "d.csv",
        "format": "csv",
    }
    assert version_event.object_id == second.pk
    assert version_event.after["version"] == 2
    assert version_event.summary.startswith("olivia uploaded a new version of")


def test_a_refused_upload_records_nothing(project, owner):
    with pytest.raises(Exception):  # noqa: B017,PT011 (the upload error's kind is not the point)
        dataset_create(
            project=project, user=owner, file=upload("d.csv", "input\n"), name="d"
        )
    assert not AuditEvent.objects.exists()


# --------------------------------------------------------------------------- members


def test_membership_changes_are_in_the_one_log(project, owner):
    newcomer = UserFactory(username="nina")
    membership_set(project=project, user=newcomer, role=Role.REVIEWER, actor=owner)
    event = AuditEvent.objects.get(project=project, subject=newcomer)
    assert (event.action, event.object_type, event.actor) == (
        "member_added",
        "membership",
        owner,
    )
    assert event.summary == "olivia added nina"
    assert event.after == {"role": "reviewer"}


def test_a_run_deleted_in_the_admin_is_recorded(admin_client, admin_user, project):
    run = RunFactory(project=project, name="gone", status=Run.Status.DONE)
    response = admin_client.post(f"/admin/evals/run/{run.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Run.objects.filter(pk=run.pk).exists()
    event = _only("run.delete")
    assert (event.actor, event.run_id, event.object_label) == (
        admin_user,
        run.pk,
        "gone",
    )


def test_the_admin_cannot_delete_a_running_run(admin_client, project):
    run = RunFactory(project=project, status=Run.Status.RUNNING)
    response = admin_client.post(f"/admin/evals/run/{run.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert Run.objects.filter(pk=run.pk).exists()
    assert not AuditEvent.objects.exists()
