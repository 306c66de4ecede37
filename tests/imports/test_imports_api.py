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
    datasets = list(Dataset.objects.order_by("version"))
    runs = list(Run.objects.order_by("pk"))
    # One dataset version and one run per prompt x provider.
    assert body["dataset_ids"] == [d.pk for d in datasets]
    assert body["run_ids"] == [r.pk for r in runs]
    assert body["dataset"]["id"] == datasets[0].pk
    assert body["dataset"]["name"] == "evals"
    assert body["dataset"]["item_count"] == 20
    assert body["run_id"] == runs[0].pk
    assert all(r.name.startswith("nightly · #") for r in runs)
    assert {r.project_id for r in runs} == {project.pk}
    assert body["summary"]["tool"] == "promptfoo"
    assert body["summary"]["details"]["stats"] == {
        "successes": 49,
        "failures": 29,
        "errors": 2,
    }
    # The run's results are reviewable through the existing override API.
    mars = Result.objects.get(run=runs[2], item__index=3, run_scorer__name="factuality")
    assert mars.final_passed is False
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
    response = post_import(
        client, project, owner, dry_run="true", input_var="(rendered prompt)"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["tool"] == "promptfoo" and body["makes_run"] is True
    assert body["items"][0]["input"].startswith("Answer in one sentence: ")
    grades = {g["scorer"]: g for g in body["items"][0]["grades"]}
    assert grades["contains"]["analysis"]["passed"] is True
    assert grades["factuality"]["analysis"]["category"] == "C"
    assert body["summary"]["input_choices"] == ["question", "(rendered prompt)"]
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
    assert {r.project_id for r in Run.objects.all()} == {project.pk}
