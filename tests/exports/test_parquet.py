"""The Parquet export for analysts: typed columns read back with pyarrow, row groups
streamed as they are written, the CSV's permissions and project isolation."""

from __future__ import annotations

import datetime as dt
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from evalsite.evals.models import Result
from evalsite.exports import services
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import QueueEntry
from evalsite.review.queues.services import queue_create
from evalsite.review.team.services import review_answer
from tests.conftest import bearer, login
from tests.exports.builders import QA_DATASET, make_run_with_score
from tests.factories import (
    CommentFactory,
    DatasetFactory,
    JudgeCallFactory,
    JudgeConnectionFactory,
    MembershipFactory,
    ScorerConfigFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

FORMULA = '=HYPERLINK("http://x")'


@pytest.fixture
def run(project, owner, reviewer):
    judge = JudgeConnectionFactory(project=project, price_per_1k_input=1)
    rows = [dict(row) for row in QA_DATASET["rows"]]
    rows[1] = {**rows[1], "input": FORMULA}
    dataset = DatasetFactory(
        project=project, name="qa", columns=QA_DATASET["columns"], rows=rows
    )
    run = make_run_with_score(
        project,
        dataset,
        [
            ScorerConfigFactory(project=project, judge=judge, kind="faithfulness"),
            ScorerConfigFactory(project=project, judge=judge, kind="hallucination"),
        ],
    )
    first = run.results.order_by("item__index", "run_scorer__position").first()
    CommentFactory(result=first, user=owner, body="-1 for this")
    JudgeCallFactory(result=first, prompt_tokens=2000, completion_tokens=10)
    return run


def _url(run, fmt="parquet", project_id=None) -> str:
    return reverse(f"exports:run_{fmt}", args=[project_id or run.project_id, run.pk])


def _table(response) -> pa.Table:
    assert response.status_code == 200, response.content
    assert response.streaming, "exports must stream"
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    body = b"".join(response.streaming_content)
    return pq.read_table(io.BytesIO(body))


def test_parquet_reads_back_with_typed_columns_and_exact_values(client, viewer, run):
    table = _table(login(client, viewer).get(_url(run)))
    assert table.num_rows == 4
    schema = table.schema
    expected_types = {
        "result_id": pa.int64(),
        "item_index": pa.int64(),
        "input": pa.string(),
        "context": pa.string(),
        "metadata.topic": pa.string(),
        "metadata.difficulty": pa.string(),
        "judge_score": pa.float64(),
        "final_passed": pa.bool_(),
        "reviewed": pa.bool_(),
        "reviewed_at": pa.timestamp("us", tz="UTC"),
        "decided_at": pa.timestamp("us", tz="UTC"),
        "scorer_version": pa.int64(),
        "scorer_options": pa.string(),
        "prompt_tokens": pa.int64(),
        "latency_ms": pa.float64(),
        "cost": pa.float64(),
        "comment_count": pa.int64(),
        "answers": pa.string(),
        "adjudication_passed": pa.bool_(),
        "review_seconds": pa.float64(),
    }
    for name, type_ in expected_types.items():
        assert schema.field(name).type == type_, name
    # The CSV's columns, in the CSV's order.
    csv_body = b"".join(client.get(_url(run, "csv")).streaming_content)
    assert table.column_names == csv_body.decode().splitlines()[0].split(",")

    rows = sorted(table.to_pylist(), key=lambda r: (r["item_index"], r["scorer"]))
    first, formula = rows[0], rows[2]
    assert first["input"] == "What is the capital of France?"
    assert json.loads(first["context"]) == [
        "Paris is the capital and largest city of France."
    ]
    assert first["metadata.topic"] == "geo"
    assert first["metadata.difficulty"] == "1"  # metadata values as text
    assert formula["metadata.difficulty"] is None
    assert first["judge_score"] == 0.75 and first["final_passed"] is True
    assert first["reviewed"] is False and first["reviewed_at"] is None
    assert first["scorer_options"] is not None
    result = Result.objects.get(pk=first["result_id"])
    assert json.loads(first["scorer_options"]) == result.run_scorer.options
    assert first["prompt_tokens"] == 2000 and first["judge_calls"] == 1
    assert first["cost"] == pytest.approx(2.0)  # 2000 tokens at 1 per 1k
    assert first["comment_count"] == 1
    # Data for programs: exact text, no spreadsheet quoting (that is CSV's).
    assert first["comments"].endswith(": -1 for this")
    assert formula["input"] == FORMULA
    assert json.loads(first["answers"]) == []
    assert first["decided_at"] is None and first["review_seconds"] is None
    metadata = table.schema.metadata
    assert metadata[b"evalsite.run_id"] == str(run.pk).encode()
    assert metadata[b"evalsite.filtered"] == b"false"


def test_parquet_answers_and_times_are_typed(client, owner, reviewer, project):
    second = UserFactory(username="bea")
    MembershipFactory(project=project, user=second, role="reviewer")
    dataset = DatasetFactory(project=project, **QA_DATASET)
    run = make_run_with_score(project, dataset, [ScorerConfigFactory(project=project)])
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"), overlap=2)
    for user, passed in ((reviewer, False), (second, False)):
        result = QueueEntry.objects.get(queue=queue, position=1).result
        review_answer(queue=queue, result=result, user=user, passed=passed, seconds=4)
    table = _table(login(client, owner).get(_url(run)))
    assert table.schema.field("answer.rita.passed").type == pa.bool_()
    assert table.schema.field("answer.bea.score").type == pa.float64()
    rows = sorted(table.to_pylist(), key=lambda r: r["item_index"])
    decided = rows[0]
    assert decided["answer.rita.passed"] is False
    assert decided["answer.bea.passed"] is False
    assert decided["review_state"] == "decided"
    assert isinstance(decided["decided_at"], dt.datetime)
    assert decided["decided_at"].tzinfo is not None
    assert decided["reviewed_at"] is not None
    assert decided["review_seconds"] == 8.0
    assert rows[1]["answer.rita.passed"] is None


def test_parquet_streams_one_row_group_at_a_time(client, owner, project, monkeypatch):
    monkeypatch.setattr(services, "PARQUET_ROWS", 3)
    monkeypatch.setattr(services, "CHUNK_SIZE", 2)
    dataset = DatasetFactory(
        project=project, rows=[{"input": f"q{i}", "output": "a"} for i in range(7)]
    )
    run = make_run_with_score(project, dataset, [ScorerConfigFactory(project=project)])
    response = login(client, owner).get(_url(run))
    pieces = list(response.streaming_content)
    # One piece per full row group as it is written, then the rest and the footer.
    assert len(pieces) == 3
    assert pieces[0].startswith(b"PAR1")
    parquet = pq.ParquetFile(io.BytesIO(b"".join(pieces)))
    assert parquet.num_row_groups == 3
    assert [parquet.metadata.row_group(i).num_rows for i in range(3)] == [3, 3, 1]
    inputs = parquet.read().column("input").to_pylist()
    assert sorted(inputs) == [f"q{i}" for i in range(7)]


def test_an_empty_run_is_a_valid_file_with_every_column(client, owner, project):
    dataset = DatasetFactory(project=project, **QA_DATASET)
    run = make_run_with_score(project, dataset, [ScorerConfigFactory(project=project)])
    run.results.all().delete()
    login(client, owner)
    table = _table(client.get(_url(run)))
    assert table.num_rows == 0
    assert "metadata.topic" in table.column_names
    assert table.schema.field("final_score").type == pa.float64()
    csv_text = b"".join(client.get(_url(run, "csv")).streaming_content).decode()
    assert csv_text.splitlines() == [",".join(table.column_names)]
    assert b"".join(client.get(_url(run, "jsonl")).streaming_content) == b""


def test_a_filter_that_matches_nothing_is_an_empty_file_named_filtered(
    client, owner, run
):
    response = login(client, owner).get(_url(run) + "?final=fail")
    assert _table(response).num_rows == 0
    assert response["Content-Disposition"].endswith(f'run-{run.pk}-filtered.parquet"')


def test_the_filter_and_ids_narrow_the_parquet_export(client, owner, run):
    hallucination = run.run_scorers.get(kind="hallucination")
    login(client, owner)
    table = _table(client.get(_url(run) + f"?run_scorer={hallucination.pk}"))
    assert set(table.column("scorer").to_pylist()) == {"Hallucination"}
    assert table.schema.metadata[b"evalsite.filtered"] == b"true"
    picked = list(run.results.order_by("pk").values_list("pk", flat=True)[:1])
    table = _table(client.get(_url(run), {"ids": picked}))
    assert table.column("result_id").to_pylist() == picked
    bad = client.get(_url(run) + "?final=maybe")
    assert bad.status_code == 400


def test_every_member_may_export_parquet_and_outsiders_get_404(
    client, run, owner, reviewer, viewer, outsider
):
    for user in (owner, reviewer, viewer):
        client.force_login(user)
        assert _table(client.get(_url(run))).num_rows == 4
    client.force_login(outsider)
    assert client.get(_url(run)).status_code == 404
    own_project = outsider.memberships.get().project_id
    assert client.get(_url(run, project_id=own_project)).status_code == 404
    client.logout()
    response = client.get(_url(run))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_api_parquet_with_a_token_and_the_same_isolation(client, viewer, outsider, run):
    response = client.get(f"/api/runs/{run.pk}/export.parquet", **bearer(viewer))
    assert _table(response).num_rows == 4
    assert response["Content-Disposition"].endswith(f'run-{run.pk}.parquet"')
    hidden = client.get(f"/api/runs/{run.pk}/export.parquet", **bearer(outsider))
    assert hidden.status_code == 404
    assert client.get(f"/api/runs/{run.pk}/export.parquet").status_code == 401
    bad = client.get(
        f"/api/runs/{run.pk}/export.parquet?passed=maybe", **bearer(viewer)
    )
    assert bad.status_code == 422
    schema = client.get("/api/openapi.json").json()
    content = schema["paths"]["/api/runs/{run_id}/export.parquet"]["get"]["responses"][
        "200"
    ]["content"]
    assert "application/vnd.apache.parquet" in content


def test_parquet_never_contains_the_judge_api_key(client, owner, project):
    secret = "sk-live-PARQUET-SECRET-0123"
    judge = JudgeConnectionFactory(project=project, api_key=secret)
    dataset = DatasetFactory(project=project, **QA_DATASET)
    run = make_run_with_score(
        project, dataset, [ScorerConfigFactory(project=project, judge=judge)]
    )
    body = b"".join(login(client, owner).get(_url(run)).streaming_content)
    assert secret.encode() not in body
