from __future__ import annotations

import pytest

from evalsite.evals.audits import services as audit_services
from evalsite.evals.runs import services as run_services
from evalsite.evals.scorers.services import scorer_create
from tests.evals.conftest import support_rows
from tests.factories import DatasetFactory


def start_run(project, owner, dataset, scorers, capture):
    with capture(execute=True):
        run = run_services.run_start(
            project=project, user=owner, dataset=dataset, scorers=scorers
        )
    run.refresh_from_db()
    return run


def start_audit(project, owner, run, run_scorer, capture, **kwargs):
    with capture(execute=True):
        audit = audit_services.bias_audit_start(
            project=project, user=owner, run=run, run_scorer=run_scorer, **kwargs
        )
    audit.refresh_from_db()
    audit.audit_run.refresh_from_db()
    return audit


@pytest.fixture
def big_dataset(project):
    return DatasetFactory(project=project, name="support-12", rows=support_rows(12))


@pytest.fixture
def faithfulness(project, owner, judge):
    return scorer_create(
        project=project,
        user=owner,
        name="Faithfulness",
        kind="faithfulness",
        judge=judge,
    )


@pytest.fixture
def factuality(project, owner, judge):
    return scorer_create(
        project=project, user=owner, name="Factuality", kind="factuality", judge=judge
    )


@pytest.fixture
def similarity(project, owner):
    return scorer_create(
        project=project, user=owner, name="Similarity", kind="content_similarity"
    )


@pytest.fixture
def judged_run(
    project,
    owner,
    big_dataset,
    faithfulness,
    factuality,
    similarity,
    django_capture_on_commit_callbacks,
):
    return start_run(
        project,
        owner,
        big_dataset,
        [faithfulness, factuality, similarity],
        django_capture_on_commit_callbacks,
    )
