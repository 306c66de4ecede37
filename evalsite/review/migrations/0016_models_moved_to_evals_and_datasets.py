"""The verdict's models went to evals and dataset matching's to datasets (state only:
the tables stay; evals 0008 and datasets 0005 take them over)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("datasets", "0005_dataset_match_moved_from_review"),
        ("evals", "0008_verdict_models_moved_from_review"),
        ("review", "0015_auditevent_to_accounts"),
    ]

    operations = [
        # State only: the tables stay where they are (Meta.db_table), no row moves.
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name="datasetmatch",
                    name="dataset_a",
                ),
                migrations.RemoveField(
                    model_name="datasetmatch",
                    name="dataset_b",
                ),
                migrations.RemoveField(
                    model_name="datasetmatchpair",
                    name="match",
                ),
                migrations.RemoveField(
                    model_name="override",
                    name="result",
                ),
                migrations.RemoveField(
                    model_name="override",
                    name="reverted_by",
                ),
                migrations.RemoveField(
                    model_name="override",
                    name="user",
                ),
                migrations.RemoveField(
                    model_name="reviewversion",
                    name="run_scorer",
                ),
                migrations.DeleteModel(
                    name="Comment",
                ),
                migrations.DeleteModel(
                    name="DatasetMatch",
                ),
                migrations.DeleteModel(
                    name="DatasetMatchPair",
                ),
                migrations.DeleteModel(
                    name="Override",
                ),
                migrations.DeleteModel(
                    name="ReviewVersion",
                ),
            ],
        ),
    ]
