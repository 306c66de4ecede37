"""Archive, unarchive and delete from the pages and the API: who may, what the
lists show, the confirmation, and another project's ids."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.accounts.models import AuditEvent
from evalsite.datasets.models import Dataset
from evalsite.evals.models import JudgeConnection, Run, ScorerConfig
from evalsite.review.models import ReviewQueue
from tests.conftest import bearer, login
from tests.factories import (
    JudgeConnectionFactory,
    ProjectFactory,
    ReviewQueueFactory,
    RunFactory,
    ScorerConfigFactory,
)

pytestmark = pytest.mark.django_db


def _archive_url(project, kind, pk, verb="archive"):
    return reverse(f"review:object_{verb}", args=[project.pk, kind, pk])


@pytest.fixture
def things(project):
    judge = JudgeConnectionFactory(project=project, name="paid judge")
    run = RunFactory(project=project, name="nightly")
    return {
        "runs": run,
        "datasets": run.dataset,
        "scorers": ScorerConfigFactory(project=project, judge=judge, name="faith"),
        "judges": judge,
        "queues": ReviewQueueFactory(run=run, name="triage"),
    }


LISTS = {
    "runs": "evals:runs",
    "datasets": "datasets:list",
    "scorers": "evals:scorers",
    "judges": "evals:judges",
    "queues": "review:assigned",
}


def _listed(client, project, kind, obj, archived=False) -> bool:
    url = reverse(LISTS[kind], args=[project.pk]) + ("?archived=1" if archived else "")
    response = client.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    return f'id="archive-{kind}-{obj.pk}"' in body or (
        f'id="unarchive-{kind}-{obj.pk}"' in body
    )


@pytest.mark.parametrize("kind", list(LISTS))
def test_archive_hides_from_the_list_and_unarchive_brings_it_back(
    client, project, owner, things, kind
):
    login(client, owner)
    obj = things[kind]
    assert _listed(client, project, kind, obj)
    assert not _listed(client, project, kind, obj, archived=True)
    response = client.post(_archive_url(project, kind, obj.pk))
    assert response.status_code == 302
    obj.refresh_from_db()
    assert obj.archived
    assert not _listed(client, project, kind, obj)
    assert _listed(client, project, kind, obj, archived=True)
    event = AuditEvent.objects.get(action__endswith=".archive")
    assert event.object_id == obj.pk and event.actor == owner
    response = client.post(_archive_url(project, kind, obj.pk, "unarchive"))
    assert response.status_code == 302
    obj.refresh_from_db()
    assert not obj.archived
    assert _listed(client, project, kind, obj)
    assert AuditEvent.objects.filter(action__endswith=".unarchive").count() == 1


def test_archive_by_htmx_redirects_the_page_back(client, project, owner, things):
    login(client, owner)
    back = reverse("evals:runs", args=[project.pk]) + "?archived=1"
    response = client.post(
        _archive_url(project, "runs", things["runs"].pk),
        {"next": back},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == back
    # Another site is never a target.
    response = client.post(
        _archive_url(project, "runs", things["runs"].pk, "unarchive"),
        {"next": "https://evil.example.com/"},
    )
    assert response.url == reverse("evals:runs", args=[project.pk])


def test_archived_things_leave_the_pickers(client, project, owner, things):
    login(client, owner)
    Dataset.objects.filter(pk=things["datasets"].pk).update(archived=True)
    ScorerConfig.objects.filter(pk=things["scorers"].pk).update(archived=True)
    body = client.get(reverse("evals:run_create", args=[project.pk])).content.decode()
    assert f'value="{things["datasets"].pk}"' not in body
    assert f'value="{things["scorers"].pk}"' not in body
    JudgeConnection.objects.filter(pk=things["judges"].pk).update(archived=True)
    body = client.get(
        reverse("evals:scorer_create", args=[project.pk]) + "?kind=faithfulness"
    ).content.decode()
    assert "paid judge" not in body
    # A scorer that has the archived judge keeps it in its form.
    ScorerConfig.objects.filter(pk=things["scorers"].pk).update(archived=False)
    body = client.get(
        reverse("evals:scorer_edit", args=[project.pk, things["scorers"].pk])
    ).content.decode()
    assert "paid judge" in body


def test_a_running_run_cannot_be_archived(client, project, owner, things):
    login(client, owner)
    Run.objects.filter(pk=things["runs"].pk).update(status=Run.Status.RUNNING)
    response = client.post(
        _archive_url(project, "runs", things["runs"].pk), follow=True
    )
    assert "cannot be archived" in response.content.decode()
    assert not Run.objects.get(pk=things["runs"].pk).archived


def test_an_old_scorer_version_cannot_be_unarchived(client, project, owner):
    login(client, owner)
    v1 = ScorerConfigFactory(project=project, archived=True)
    ScorerConfigFactory(project=project, name=v1.name, version=2, parent=v1)
    response = client.post(
        _archive_url(project, "scorers", v1.pk, "unarchive"), follow=True
    )
    assert "old version" in response.content.decode()
    v1.refresh_from_db()
    assert v1.archived
    # Nor is it listed among the archived scorers.
    assert not _listed(client, project, "scorers", v1, archived=True)


# Who may.


@pytest.mark.parametrize("kind", ["runs", "datasets", "scorers", "queues"])
def test_reviewers_archive_but_do_not_delete(client, project, reviewer, things, kind):
    login(client, reviewer)
    obj = things[kind]
    assert client.post(_archive_url(project, kind, obj.pk)).status_code == 302
    delete = reverse("review:object_delete", args=[project.pk, kind, obj.pk])
    assert client.get(delete).status_code == 403
    assert client.post(delete, {"confirm": str(obj)}).status_code == 403
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_only_owners_archive_judges(client, project, reviewer, things):
    login(client, reviewer)
    judge = things["judges"]
    assert client.post(_archive_url(project, "judges", judge.pk)).status_code == 403
    judge.refresh_from_db()
    assert not judge.archived


@pytest.mark.parametrize("kind", list(LISTS))
def test_viewers_are_refused(client, project, viewer, things, kind):
    login(client, viewer)
    obj = things[kind]
    assert client.post(_archive_url(project, kind, obj.pk)).status_code == 403
    delete = reverse("review:object_delete", args=[project.pk, kind, obj.pk])
    assert client.post(delete, {"confirm": "x"}).status_code == 403
    obj.refresh_from_db()
    assert not obj.archived


@pytest.mark.parametrize("kind", list(LISTS))
def test_another_projects_object_is_404(client, project, owner, things, kind):
    """Under this project's URL, and under its own project's for a non-member."""
    other = ProjectFactory()
    other_run = RunFactory(project=other)
    other_things = {
        "runs": other_run,
        "datasets": other_run.dataset,
        "scorers": ScorerConfigFactory(project=other),
        "judges": JudgeConnectionFactory(project=other),
        "queues": ReviewQueueFactory(run=other_run),
    }
    obj = other_things[kind]
    login(client, owner)
    for p in (project, other):
        assert client.post(_archive_url(p, kind, obj.pk)).status_code == 404
        delete = reverse("review:object_delete", args=[p.pk, kind, obj.pk])
        assert client.get(delete).status_code == 404
        assert client.post(delete, {"confirm": "x"}).status_code == 404
    obj.refresh_from_db()
    assert not obj.archived


# The confirmation.


def test_delete_page_counts_what_goes_and_needs_the_name(client, project, owner):
    from evalsite.evals.models import Result
    from tests.factories import ResultFactory

    login(client, owner)
    run = RunFactory(project=project, name="nightly")
    for _ in range(3):
        ResultFactory(run=run)
    delete = reverse("review:object_delete", args=[project.pk, "runs", run.pk])
    body = client.get(delete).content.decode()
    assert 'data-label="results">3<' in body
    assert 'data-label="runs">1<' in body
    assert "Type <strong>nightly</strong>" in body
    response = client.post(delete, {"confirm": "nightl"})
    assert response.status_code == 400
    assert "exactly" in response.content.decode()
    assert Run.objects.filter(pk=run.pk).exists()
    response = client.post(delete, {"confirm": "nightly"})
    assert response.status_code == 302
    assert response.url == reverse("evals:runs", args=[project.pk])
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Result.objects.filter(run_id=run.pk).exists()
    event = AuditEvent.objects.get(action="run.delete")
    assert event.run_id == run.pk and event.object_label == "nightly"
    assert event.before["counts"]["results"] == 3


def test_delete_page_names_the_blocker_and_refuses(client, project, owner, things):
    login(client, owner)
    run = things["runs"]
    delete = reverse("review:object_delete", args=[project.pk, "runs", run.pk])
    body = client.get(delete).content.decode()
    assert 'id="delete-blockers"' in body and "triage" in body
    assert 'id="delete-form"' not in body
    response = client.post(delete, {"confirm": "nightly"})
    assert response.status_code == 409
    assert "triage" in response.content.decode()
    assert Run.objects.filter(pk=run.pk).exists()
    # Closing the queue lets the run go, and the page says the queue goes with it.
    ReviewQueue.objects.filter(pk=things["queues"].pk).update(archived=True)
    body = client.get(delete).content.decode()
    assert 'id="delete-closed-queues"' in body and "triage" in body
    assert client.post(delete, {"confirm": "nightly"}).status_code == 302
    assert not ReviewQueue.objects.filter(pk=things["queues"].pk).exists()


# The API.


def test_api_archive_unarchive_list_and_delete(client, project, owner, things):
    headers = bearer(owner)
    run = things["runs"]
    base = f"/api/projects/{project.pk}/runs/{run.pk}"
    response = client.post(base + "/archive", **headers)
    assert response.status_code == 200
    assert response.json() == {
        "kind": "runs",
        "id": run.pk,
        "name": "nightly",
        "archived": True,
    }
    listed = client.get(f"/api/projects/{project.pk}/runs", **headers).json()
    assert run.pk not in [r["id"] for r in listed["items"]]
    listed = client.get(
        f"/api/projects/{project.pk}/runs?archived=true", **headers
    ).json()
    assert [(r["id"], r["archived"]) for r in listed["items"]] == [(run.pk, True)]
    assert client.post(base + "/unarchive", **headers).json()["archived"] is False
    # The open queue keeps the run: 409 with the reason, nothing deleted.
    response = client.delete(base, **headers)
    assert response.status_code == 409
    assert "triage" in response.json()["detail"]
    queue = things["queues"]
    response = client.delete(f"/api/projects/{project.pk}/queues/{queue.pk}", **headers)
    assert response.status_code == 200
    assert response.json()["deleted"] == {"review queues": 1}
    response = client.delete(base, **headers)
    assert response.status_code == 200
    body = response.json()
    assert body["deleted"]["runs"] == 1 and body["name"] == "nightly"
    assert not Run.objects.filter(pk=run.pk).exists()


@pytest.mark.parametrize(
    ("kind", "list_path"),
    [("datasets", "datasets"), ("judges", "judges"), ("scorers", "scorers")],
)
def test_api_lists_leave_archived_out_unless_asked(
    client, project, owner, things, kind, list_path
):
    headers = bearer(owner)
    obj = things[kind]
    client.post(f"/api/projects/{project.pk}/{kind}/{obj.pk}/archive", **headers)
    url = f"/api/projects/{project.pk}/{list_path}"
    active = client.get(url, **headers).json()["items"]
    archived = client.get(url + "?archived=true", **headers).json()["items"]
    assert obj.pk not in [o["id"] for o in active]
    assert obj.pk in [o["id"] for o in archived]


def test_api_refuses_reviewers_deleting_and_viewers_archiving(
    client, project, reviewer, viewer, things
):
    run = things["runs"]
    base = f"/api/projects/{project.pk}/runs/{run.pk}"
    assert client.delete(base, **bearer(reviewer)).status_code == 403
    assert client.post(base + "/archive", **bearer(viewer)).status_code == 403
    assert client.post(base + "/archive", **bearer(reviewer)).status_code == 200
    response = client.post(
        f"/api/projects/{project.pk}/judges/{things['judges'].pk}/archive",
        **bearer(reviewer),
    )
    assert response.status_code == 403
    assert Run.objects.filter(pk=run.pk).exists()


def test_api_unknown_kind_is_refused(client, project, owner, things):
    response = client.post(
        f"/api/projects/{project.pk}/webhooks/{things['runs'].pk}/archive",
        **bearer(owner),
    )
    assert response.status_code == 404


def test_run_page_controls_come_back_to_the_run_page(client, project, owner, things):
    """The run page's status region is refreshed by htmx from another URL: its
    buttons still send the user back to the run page."""
    login(client, owner)
    run = things["runs"]
    detail = reverse("evals:run_detail", args=[project.pk, run.pk])
    progress = reverse("evals:run_progress", args=[project.pk, run.pk])
    body = client.get(progress, HTTP_HX_REQUEST="true").content.decode()
    assert f'id="archive-runs-{run.pk}"' in body
    assert f'"next": "{detail}"' in body
    response = client.post(_archive_url(project, "runs", run.pk), {"next": detail})
    assert response.url == detail
    assert 'id="run-archived"' in client.get(detail).content.decode()
