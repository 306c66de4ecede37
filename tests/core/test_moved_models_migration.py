"""The models that moved between apps keep their tables and rows: migrating back to
before the move (review 0014, evals 0007, datasets 0004) and forward again reads the
same rows, first through review's historical models, then through evals' and datasets'.
Runs on the suite's Postgres and on SQLite (DATABASE_URL=sqlite:///...)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evalsite.datasets.models import DatasetMatch, DatasetMatchPair
from evalsite.evals.models import Comment, Override, ReviewVersion
from tests.factories import (
    CommentFactory,
    DatasetFactory,
    OverrideFactory,
    ResultFactory,
)

BEFORE = [
    ("review", "0014_queue_filters_run_scorer"),
    ("evals", "0007_judgecall_error_body"),
    ("datasets", "0004_item_agent_data"),
]
AFTER = [
    ("review", "0016_models_moved_to_evals_and_datasets"),
    ("evals", "0008_verdict_models_moved_from_review"),
    ("datasets", "0005_dataset_match_moved_from_review"),
]
MOVED = {
    "override": ("review", "evals"),
    "comment": ("review", "evals"),
    "reviewversion": ("review", "evals"),
    "datasetmatch": ("review", "datasets"),
    "datasetmatchpair": ("review", "datasets"),
}


def _rows(executor: MigrationExecutor, targets: list[tuple[str, str]], side: int):
    apps = executor.loader.project_state(targets).apps
    found = {}
    for model, owners in MOVED.items():
        historical = apps.get_model(owners[side], model)
        assert historical._meta.db_table == f"review_{model}"
        found[model] = sorted(historical.objects.values_list(*_fields(model)), key=repr)
    return found


def _fields(model: str) -> tuple[str, ...]:
    return {
        "override": ("id", "result_id", "kind", "new_value"),
        "comment": ("id", "result_id", "body"),
        "reviewversion": ("run_scorer_id", "version"),
        "datasetmatch": ("id", "dataset_a_id", "dataset_b_id", "rule", "matched"),
        "datasetmatchpair": ("match_id", "item_a", "item_b"),
    }[model]


@pytest.mark.django_db(transaction=True)
def test_moved_models_keep_their_rows_back_and_forth():
    result = ResultFactory()
    OverrideFactory(result=result, kind="pass", new_value=True)
    CommentFactory(result=result, body="kept")
    ReviewVersion.objects.create(run_scorer=result.run_scorer, version=3)
    a, b = DatasetFactory(), DatasetFactory()
    match = DatasetMatch.objects.create(
        dataset_a=a,
        dataset_b=b,
        rule="key:id",
        items_a=1,
        items_b=1,
        matched=1,
        only_in_a=0,
        only_in_b=0,
        no_key_a=0,
        no_key_b=0,
    )
    DatasetMatchPair.objects.create(match=match, item_a=11, item_b=12)

    executor = MigrationExecutor(connection)
    now = _rows(executor, AFTER, side=1)
    assert all(now.values()), now
    try:
        executor.migrate(BEFORE)
        executor = MigrationExecutor(connection)
        assert _rows(executor, BEFORE, side=0) == now
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    executor = MigrationExecutor(connection)
    assert _rows(executor, AFTER, side=1) == now
    assert Override.objects.get().new_value is True
    assert Comment.objects.get().body == "kept"
    assert DatasetMatch.objects.get().pairs.get().item_b == 12
