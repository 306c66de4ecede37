"""The Import page: upload, preview with summary and warnings, create; access rules."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.datasets.models import Dataset
from evalsite.evals.models import Run
from tests.conftest import login
from tests.datasets.test_imports import fixture, upload
from tests.factories import MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def start_url(project):
    return reverse("imports:start", args=[project.pk])


def start(client, project, file=None, **fields):
    return client.post(
        start_url(project),
        {"file": file or fixture("promptfoo_results.json"), **fields},
    )


def test_datasets_list_links_to_import_for_writers_only(client, project, owner, viewer):
    login(client, owner)
    page = client.get(reverse("datasets:list", args=[project.pk]))
    assert start_url(project) in page.content.decode()
    login(client, viewer)
    page = client.get(reverse("datasets:list", args=[project.pk]))
    assert start_url(project) not in page.content.decode()


def test_promptfoo_walk_upload_preview_import(client, project, owner):
    login(client, owner)
    assert client.get(start_url(project)).status_code == 200
    response = start(client, project)
    assert response.status_code == 302
    preview_url = response["Location"]
    page = client.get(preview_url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "80</strong> items" in html
    assert "llm-rubric" in html and "promptfoo test" in html
    assert "What is the capital of France?" in html
    assert "factuality: C" in html
    # The summary says what the import makes: four versions and four runs, every
    # check a scorer (none "kept in metadata" or "not imported").
    assert "<strong>4</strong> versions of one dataset" in html
    assert "<strong>4</strong> finished runs, one per prompt × provider" in html
    assert "not imported" not in html
    assert 'id="import-groups"' in html
    assert not Dataset.objects.exists()  # the preview creates nothing

    response = client.post(preview_url, {"name": "nightly evals", "run_name": "n1"})
    assert response.status_code == 302, response.content.decode()[:2000]
    # One run per prompt x provider: the runs list, to tick two and compare.
    assert response["Location"] == reverse("evals:runs", args=[project.pk])
    runs = list(Run.objects.all())
    assert len(runs) == 4
    assert all(r.name.startswith("n1 · ") for r in runs)
    assert {r.dataset.name for r in runs} == {"nightly evals"}
    # The stored file is gone with its token.
    assert client.get(preview_url).status_code == 404


def test_preview_input_choice_and_tool_override(client, project, owner):
    login(client, owner)
    preview_url = start(client, project)["Location"]
    choice = "(rendered prompt)"
    html = client.get(preview_url, {"input_var": choice}).content.decode()
    assert "<td>Answer in one sentence: What is the capital of France?</td>" in html
    # Importing with that choice keeps it.
    client.post(preview_url, {"name": "t", "input_var": choice, "tool": ""})
    first = Dataset.objects.order_by("version").first()
    assert first.items.get(index=0).input.startswith("Answer in one sentence: ")


def test_wrong_tool_override_shows_the_error(client, project, owner):
    login(client, owner)
    preview_url = start(client, project)["Location"]
    page = client.get(preview_url, {"tool": "langfuse"})
    assert page.status_code == 200
    assert "must be one JSON array" in page.content.decode()
    response = client.post(preview_url, {"name": "x", "tool": "langfuse"})
    assert response.status_code == 400
    assert not Dataset.objects.exists()


def test_langfuse_import_redirects_to_the_dataset(client, project, owner):
    login(client, owner)
    preview_url = start(client, project, file=fixture("langfuse_dataset_items.jsonl"))[
        "Location"
    ]
    html = client.get(preview_url).content.decode()
    assert "No judge verdicts or grades in the file" in html
    assert "no model output" in html
    response = client.post(preview_url, {"name": "lf"})
    dataset = Dataset.objects.get()
    assert response["Location"] == reverse(
        "datasets:detail", args=[project.pk, dataset.pk]
    )
    assert not Run.objects.exists()


def test_unrecognised_file_is_refused_at_upload(client, project, owner):
    login(client, owner)
    response = start(client, project, file=upload("x.csv", "a,b\n1,2\n"))
    assert response.status_code == 400
    assert "Columns found: a, b" in response.content.decode()


def test_viewer_403_outsider_404_anonymous_redirected(
    client, project, viewer, outsider
):
    login(client, viewer)
    assert client.get(start_url(project)).status_code == 403
    assert start(client, project).status_code == 403
    login(client, outsider)
    assert client.get(start_url(project)).status_code == 404
    client.logout()
    response = client.get(start_url(project))
    assert response.status_code == 302 and "login" in response["Location"]


def test_token_is_bound_to_user_and_project(client, project, owner, reviewer):
    login(client, owner)
    preview_url = start(client, project)["Location"]
    token = preview_url.rstrip("/").rsplit("/", 1)[1]
    other = ProjectFactory()
    MembershipFactory(project=other, user=owner, role="owner")
    assert (
        client.get(reverse("imports:preview", args=[other.pk, token])).status_code
        == 404
    )
    login(client, reviewer)
    assert client.get(preview_url).status_code == 404


def test_import_needs_csrf(project, owner):
    client = Client(enforce_csrf_checks=True)
    login(client, owner)
    assert start(client, project).status_code == 403


def test_imported_run_pages_render(client, project, owner):
    """The run page, its explorer and a result's review page take a run whose scorer
    has no config and no judge connection (the grading happened in promptfoo)."""
    login(client, owner)
    preview_url = start(client, project)["Location"]
    client.post(preview_url, {"name": "pf"})
    run = Run.objects.order_by("pk")[2]  # model-b, first prompt
    page = client.get(reverse("evals:run_detail", args=[project.pk, run.pk]))
    assert page.status_code == 200
    assert "openai:chat:grader" in page.content.decode()
    page = client.get(reverse("review:explorer", args=[project.pk, run.pk]))
    assert page.status_code == 200
    result = run.results.get(item__index=3, run_scorer__name="factuality")
    page = client.get(reverse("review:item", args=[project.pk, result.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Mars has two moons" in html
    assert "disagrees" in html  # category D's label, overridable on this page
    rubric = run.results.get(item__index=3, run_scorer__name="llm-rubric")
    page = client.get(reverse("review:item", args=[project.pk, rubric.pk]))
    assert page.status_code == 200
    # The run exports like any other, with the imported reason.
    export = client.get(reverse("exports:run_jsonl", args=[project.pk, run.pk]))
    assert export.status_code == 200
    body = b"".join(export.streaming_content).decode()
    assert "contradicts the expert answer" in body
