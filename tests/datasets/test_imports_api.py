"""POST /api/projects/{id}/imports: the import service behind the API's rules."""

from __future__ import annotations

import json

import pytest

from evalsite.datasets.models import Dataset
from evalsite.evals.models import Result, Run
from tests.conftest import bearer
from tests.datasets.test_imports import fixture, promptfoo_doc, upload
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def post_import(client, project, user, file=None, **fields):
    return client.post(
        f"/api/projects/{project.pk}/imports",
        {"file": file or fixture("promptfoo_results.json"), **fields},
        **(bearer(user) if user else {}),
    )


def test_promptfoo_import_returns_the_dataset_and_the_run(client, project, reviewer):
    response = post_import(client, project, reviewer, name="evals", run_name="nightly")
    assert response.status_code == 201, response.content
    body = response.json()
    dataset = Dataset.objects.get()
    run = Run.objects.get()
    assert body["dataset"]["id"] == dataset.pk
    assert body["dataset"]["name"] == "evals"
    assert body["dataset"]["item_count"] == 7
    assert body["run_id"] == run.pk
    assert run.name == "nightly" and run.project_id == project.pk
    assert body["summary"]["tool"] == "promptfoo"
    assert body["summary"]["verdicts"] == {"pass": 4, "fail": 1, "error": 1}
    assert body["summary"]["other_assertions"] == {"icontains": 2, "javascript": 1}
    assert Result.objects.filter(run=run).count() == 6
    # The run's results are reviewable through the existing override API.
    mars = Result.objects.get(run=run, item__index=3)
    response = client.post(
        f"/api/results/{mars.pk}/overrides",
        {"kind": "verdict", "path": "category", "value": "C"},
        content_type="application/json",
        **bearer(reviewer),
    )
    assert response.status_code in (200, 201), response.content
    mars.refresh_from_db()
    assert mars.final_passed is True and mars.judge_passed is False


def test_dry_run_previews_and_creates_nothing(client, project, owner):
    response = post_import(client, project, owner, dry_run="true", input_var="topic")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["tool"] == "promptfoo" and body["makes_run"] is True
    assert body["items"][0]["input"] == "geography"
    assert body["items"][3]["verdict"]["analysis"]["category"] == "D"
    assert body["summary"]["input_choices"] == [
        "topic",
        "question",
        "(rendered prompt)",
    ]
    assert not Dataset.objects.exists() and not Run.objects.exists()


def test_langfuse_file_makes_a_dataset_without_a_run(client, project, owner):
    response = post_import(
        client,
        project,
        owner,
        file=fixture("langfuse_dataset_items.csv"),
        tool="auto",
    )
    assert response.status_code == 201, response.content
    assert response.json()["run_id"] is None
    assert response.json()["summary"]["tool"] == "langfuse"


def test_unknown_promptfoo_version_is_a_400_naming_it(client, project, owner):
    doc = promptfoo_doc()
    doc["results"]["version"] = 9
    response = post_import(
        client, project, owner, file=upload("results.json", json.dumps(doc))
    )
    assert response.status_code == 400
    body = response.json()
    assert "version 9" in body["detail"]
    assert body["errors"][0]["field"] == "column results.version"
    assert not Dataset.objects.exists()


def test_unrecognised_file_is_a_400(client, project, owner):
    response = post_import(client, project, owner, file=upload("x.csv", "a,b\n1,2\n"))
    assert response.status_code == 400
    assert "Columns found: a, b" in response.json()["detail"]


def test_unknown_tool_is_a_400(client, project, owner):
    response = post_import(client, project, owner, tool="braintrust")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "tool"


def test_viewer_cannot_import(client, project, viewer):
    assert post_import(client, project, viewer).status_code == 403
    assert not Dataset.objects.exists()


def test_outsider_gets_404_and_anonymous_401(client, project, outsider):
    assert post_import(client, project, outsider).status_code == 404
    assert post_import(client, project, None).status_code == 401
    assert not Dataset.objects.exists()


def test_import_lands_in_the_callers_project_only(client, project, owner):
    other = ProjectFactory()
    response = post_import(client, project, owner)
    assert response.status_code == 201
    assert not Dataset.objects.filter(project=other).exists()
    assert Run.objects.get().project_id == project.pk
