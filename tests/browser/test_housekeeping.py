"""Real browser: an owner archives a run from the run list (htmx, CSRF header),
finds it under Archived, unarchives it, then deletes it after typing its name; and
the mapping step picks a `context_chunks` column of JSON lists."""

from __future__ import annotations

import json

import pytest

from evalsite.accounts.models import Role
from evalsite.evals.models import Run
from tests.browser.conftest import login
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    ResultFactory,
    RunFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup():
    project = ProjectFactory(name="Browser housekeeping")
    MembershipFactory(
        project=project, user=UserFactory(username="olivia"), role=Role.OWNER
    )
    run = RunFactory(project=project, name="nightly")
    for _ in range(2):
        ResultFactory(run=run)
    return project, run


def test_owner_archives_unarchives_and_deletes_a_run(page, live_server, setup):
    project, run = setup
    login(page, live_server, "olivia", "pw")
    runs_url = f"{live_server.url}/projects/{project.pk}/runs/"
    page.goto(runs_url)
    page.click(f"#archive-runs-{run.pk}")
    page.wait_for_selector(f"#archive-runs-{run.pk}", state="detached")
    assert "is archived" in page.inner_text("body")
    assert Run.objects.get(pk=run.pk).archived

    page.click("#tab-archived")
    page.click(f"#unarchive-runs-{run.pk}")
    page.wait_for_selector(f"#unarchive-runs-{run.pk}", state="detached")
    assert not Run.objects.get(pk=run.pk).archived

    page.goto(runs_url)
    page.click(f"#delete-runs-{run.pk}")
    assert page.inner_text('[data-label="results"]') == "2"
    page.fill("#delete-confirm", "nightly")
    page.click("#delete-button")
    page.wait_for_url(runs_url)
    assert "Deleted the run “nightly”" in page.inner_text("body")
    assert not Run.objects.filter(pk=run.pk).exists()


def test_mapping_step_selects_the_context_chunks_column(
    page, live_server, setup, tmp_path, settings
):
    settings.VAR_DIR = tmp_path
    project, _ = setup
    chunks = json.dumps(["chunk one", "chunk two"]).replace('"', '""')
    data = f'question,answer,context_chunks\nq,a,"{chunks}"\n'
    path = tmp_path / "rag.csv"
    path.write_text(data, encoding="utf-8")
    login(page, live_server, "olivia", "pw")
    page.goto(f"{live_server.url}/projects/{project.pk}/datasets/")
    page.set_input_files("input[name=file]", str(path))
    page.click("#upload-button")
    page.wait_for_selector("#mapping-form")
    assert page.input_value("select[name=context]") == "context_chunks"
    assert page.input_value("select[name=input]") == "question"
    page.click("#create-button")
    page.wait_for_selector("ol.context-chunks")
    assert "chunk two" in page.inner_text("ol.context-chunks")
