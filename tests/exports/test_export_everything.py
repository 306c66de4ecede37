"""Exports carry everything a reviewer and the judge added to a result: comments,
each reviewer's answer (blind until the entry is decided), the decision and the
adjudication, the scorer's version and options, the judge's model, usage and cost,
review time; and their file names tell the formats apart."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.accounts.models import Role
from evalsite.evals.models import Comment, Result
from evalsite.exports import services
from evalsite.review.explorer.schemas import ResultQuery
from evalsite.review.models import FinalRule, QueueEntry
from evalsite.review.queues.services import queue_create
from evalsite.review.team.services import review_adjudicate, review_answer
from tests.conftest import bearer, login
from tests.factories import (
    CommentFactory,
    JudgeCallFactory,
    JudgeConnectionFactory,
    MembershipFactory,
    OverrideFactory,
    UserFactory,
)
from tests.review.builders import judged_claims, make_run

pytestmark = pytest.mark.django_db

V1 = "verdicts.0.verdict"
AT = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


@pytest.fixture
def second(project):
    user = UserFactory(username="bea")
    MembershipFactory(project=project, user=user, role=Role.REVIEWER)
    return user


@pytest.fixture
def adjudicator(project):
    user = UserFactory(username="ada")
    MembershipFactory(project=project, user=user, role=Role.ADJUDICATOR)
    return user


def _entry_result(queue, position) -> Result:
    return QueueEntry.objects.get(queue=queue, position=position).result


@pytest.fixture
def world(project, owner, reviewer, second, adjudicator):
    """Three results in an overlap-2 unanimous queue: #1 decided unanimously (with
    comments and judge calls), #2 adjudicated after a split, #3 answered by rita only
    (still open, so blind to everyone else)."""
    judge = JudgeConnectionFactory(
        project=project,
        model="gpt-4o-mini",
        price_per_1k_input=Decimal("0.15"),
        price_per_1k_output=Decimal("0.6"),
    )
    run = make_run(
        project,
        n_items=3,
        analyses={
            "faithfulness": [
                judged_claims("yes", "yes"),
                judged_claims("yes", "no"),
                judged_claims("yes", "yes"),
            ]
        },
    )
    run_scorer = run.run_scorers.get()
    run_scorer.judge = judge
    run_scorer.judge_snapshot = {"model": "gpt-4o-2024-08-06", "is_offline": False}
    run_scorer.save()
    run_scorer.scorer.version = 3
    run_scorer.scorer.save()
    queue = queue_create(
        run=run,
        user=owner,
        query=ResultQuery(sort="item"),
        overlap=2,
        final_rule=FinalRule.UNANIMOUS,
        blind=True,
        name="double check",
    )
    first = _entry_result(queue, 1)
    review_answer(
        queue=queue,
        result=first,
        user=reviewer,
        passed=False,
        flips={V1: "no"},
        note="claim 0 is not in the context",
        seconds=12.5,
    )
    review_answer(
        queue=queue,
        result=_entry_result(queue, 1),
        user=second,
        passed=False,
        flips={V1: "no"},
        seconds=7.5,
    )
    review_answer(
        queue=queue, result=_entry_result(queue, 2), user=reviewer, passed=True
    )
    review_answer(
        queue=queue,
        result=_entry_result(queue, 2),
        user=second,
        passed=False,
        seconds=30,
    )
    review_adjudicate(
        queue=queue,
        result=_entry_result(queue, 2),
        user=adjudicator,
        passed=True,
        note="the context supports it",
    )
    review_answer(
        queue=queue,
        result=_entry_result(queue, 3),
        user=reviewer,
        passed=True,
        note="fine",
        seconds=5,
    )
    c1 = CommentFactory(result=first, user=owner, body="look again")
    c2 = CommentFactory(result=first, user=reviewer, body="=1+1 is not a claim")
    Comment.objects.filter(pk=c1.pk).update(created_at=AT)
    Comment.objects.filter(pk=c2.pk).update(created_at=AT + dt.timedelta(minutes=1))
    JudgeCallFactory(
        result=first,
        step="claims",
        prompt_tokens=1000,
        completion_tokens=200,
        latency_ms=120.5,
    )
    # A cache hit carries the first call's usage but costs nothing.
    JudgeCallFactory(
        result=first,
        step="verdicts",
        prompt_tokens=500,
        completion_tokens=100,
        latency_ms=80.0,
        cache_hit=True,
    )
    return {"run": run, "queue": queue, "run_scorer": run_scorer, "judge": judge}


def _body(response) -> bytes:
    assert response.status_code == 200, response.content
    assert response.streaming, "exports must stream"
    return b"".join(response.streaming_content)


def _url(run, fmt="csv") -> str:
    return reverse(f"exports:run_{fmt}", args=[run.project_id, run.pk])


def _csv_rows(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_body(response).decode("utf-8"))))


def _by_index(rows, key="item_index"):
    return {str(row[key]): row for row in rows}


def test_csv_carries_comments_answers_decision_adjudication_and_usage(
    client, owner, viewer, world
):
    run = world["run"]
    rows = _by_index(_csv_rows(login(client, owner).get(_url(run))))
    first, second = rows["0"], rows["1"]
    # #3 waits for the owner's answer in the blind queue: left out of their export
    # (review.selectors.blind). A viewer, who cannot answer, gets the row.
    assert "2" not in rows
    third = _by_index(_csv_rows(login(client, viewer).get(_url(run))))["2"]

    # The scorer as the run used it, and the judge.
    assert first["scorer_version"] == "3"
    assert json.loads(first["scorer_options"]) == world["run_scorer"].options
    assert first["judge_model"] == "gpt-4o-2024-08-06"

    # Usage: both calls; cost only for the one that was not a cache hit
    # (1000 × 0.15 + 200 × 0.6) / 1000.
    assert (first["judge_calls"], first["cache_hits"]) == ("2", "1")
    assert (first["prompt_tokens"], first["completion_tokens"]) == ("1500", "300")
    assert float(first["latency_ms"]) == pytest.approx(200.5)
    assert float(first["cost"]) == pytest.approx(0.27)
    # No calls: nothing spent, no latency.
    assert (second["judge_calls"], second["prompt_tokens"]) == ("0", "0")
    assert second["latency_ms"] == "" and float(second["cost"]) == 0

    # Every comment, oldest first, readable; text inside a cell is not a formula.
    assert first["comment_count"] == "2"
    assert first["comments"] == (
        "olivia (2026-01-02 03:04 UTC): look again\n"
        "rita (2026-01-02 03:05 UTC): =1+1 is not a claim"
    )
    assert (second["comment_count"], second["comments"]) == ("0", "")

    # Each reviewer's answer: wide columns and the full JSON.
    assert first["answer_count"] == "2"
    assert (first["answer.rita.passed"], first["answer.bea.passed"]) == (
        "false",
        "false",
    )
    assert first["answer.rita.note"] == "claim 0 is not in the context"
    answers = json.loads(first["answers"])
    assert [a["reviewer"] for a in answers] == ["rita", "bea"]
    assert answers[0]["flips"] == {V1: "no"}
    assert answers[0]["queue"] == "double check"
    assert answers[0]["queue_id"] == world["queue"].pk
    assert answers[0]["seconds"] == 12.5
    assert first["review_seconds"] == "20.0"

    # The rule's decision.
    entry = QueueEntry.objects.get(queue=world["queue"], position=1)
    assert (first["review_state"], first["decision"]) == ("decided", "unanimous")
    assert dt.datetime.fromisoformat(first["decided_at"]) == entry.decided_at
    assert first["adjudicator"] == "" and first["adjudication_passed"] == ""
    assert (first["reviewed"], first["final_passed"]) == ("true", "false")
    assert first["reviewed_at"]

    # The adjudication after a split.
    assert (second["answer.rita.passed"], second["answer.bea.passed"]) == (
        "true",
        "false",
    )
    assert (second["review_state"], second["decision"]) == ("decided", "adjudicated")
    assert second["adjudicator"] == "ada"
    assert second["adjudication_passed"] == "true"
    assert second["adjudication_note"] == "the context supports it"
    assert dt.datetime.fromisoformat(second["adjudicated_at"]) <= (
        dt.datetime.fromisoformat(second["decided_at"])
    )
    assert second["final_passed"] == "true"
    assert second["review_seconds"] == "30.0"

    # Still open: rita's answer is blind to the viewer (not even counted), but the
    # time spent is not an answer.
    assert third["review_state"] == "open" and third["decision"] == ""
    assert third["answer_count"] == "0" and third["answers"] == "[]"
    assert third["answer.rita.passed"] == third["answer.rita.note"] == ""
    assert third["review_seconds"] == "5.0"


def test_the_reviewer_who_answered_an_open_entry_sees_the_answers_in_it(
    client, reviewer, second, world
):
    run = world["run"]
    mine = _by_index(_csv_rows(login(client, reviewer).get(_url(run))))["2"]
    assert mine["answer_count"] == "1"
    assert (mine["answer.rita.passed"], mine["answer.rita.note"]) == ("true", "fine")
    # bea has not answered #3: the result is blind to her, and its row (rita's
    # answer, the judge's and the final values) is left out, in every format.
    login(client, second)
    assert "2" not in _by_index(_csv_rows(client.get(_url(run))))
    records = [
        json.loads(line) for line in _body(client.get(_url(run, "jsonl"))).splitlines()
    ]
    assert "2" not in _by_index(records) and "0" in _by_index(records)


def test_jsonl_has_the_same_fields_as_json_values(client, owner, world):
    run = world["run"]
    lines = _body(login(client, owner).get(_url(run, "jsonl"))).splitlines()
    records = _by_index([json.loads(line) for line in lines])
    first, second = records["0"], records["1"]
    assert first["comments"] == [
        {"author": "olivia", "created_at": AT.isoformat(), "body": "look again"},
        {
            "author": "rita",
            "created_at": (AT + dt.timedelta(minutes=1)).isoformat(),
            "body": "=1+1 is not a claim",
        },
    ]
    assert [(a["reviewer"], a["passed"]) for a in first["answers"]] == [
        ("rita", False),
        ("bea", False),
    ]
    assert "answer.rita.passed" not in first  # the list has them
    assert first["scorer_version"] == 3
    assert first["scorer_options"] == world["run_scorer"].options
    assert (first["prompt_tokens"], first["cache_hits"]) == (1500, 1)
    assert first["cost"] == pytest.approx(0.27)
    assert first["review_seconds"] == 20.0
    assert dt.datetime.fromisoformat(first["decided_at"]).tzinfo is not None
    assert second["adjudicator"] == "ada" and second["adjudication_passed"] is True
    assert second["decision"] == "adjudicated"


def test_override_notes_and_comments_of_several_results_stay_apart(
    client, owner, viewer, world
):
    run = world["run"]
    first = _entry_result(world["queue"], 1)
    third = _entry_result(world["queue"], 3)
    OverrideFactory(result=third, kind="score", new_value=0.1, note="too generous")
    CommentFactory(result=third, user=owner, body="only here")
    # The viewer: #3 is blind to the owner, who has not answered it.
    rows = _by_index(_csv_rows(login(client, viewer).get(_url(run))))
    assert rows["2"]["override_notes"] == "too generous"
    assert rows["2"]["comments"].endswith("only here")
    assert "only here" not in rows["0"]["comments"]
    assert str(first.pk) == rows["0"]["result_id"]


def test_cost_is_blank_without_a_price_and_zero_for_the_offline_judge(
    client, owner, world
):
    run, judge = world["run"], world["judge"]
    judge.price_per_1k_input = judge.price_per_1k_output = None
    judge.save()
    login(client, owner)
    rows = _by_index(_csv_rows(client.get(_url(run))))
    assert rows["0"]["cost"] == "" and rows["0"]["prompt_tokens"] == "1500"
    # A deleted judge connection: the model stays (snapshot), the price is unknown.
    run_scorer = world["run_scorer"]
    run_scorer.judge = None
    run_scorer.save()
    rows = _by_index(_csv_rows(client.get(_url(run))))
    assert rows["0"]["cost"] == ""
    assert rows["0"]["judge_model"] == "gpt-4o-2024-08-06"
    run_scorer.judge_snapshot = {"model": "offline", "is_offline": True}
    run_scorer.save()
    rows = _by_index(_csv_rows(client.get(_url(run))))
    assert float(rows["0"]["cost"]) == 0.0


def test_a_run_without_reviews_has_the_fixed_columns_and_empty_cells(
    client, owner, project
):
    run = make_run(project, n_items=2)
    rows = _csv_rows(login(client, owner).get(_url(run)))
    assert len(rows) == 2
    names = list(rows[0])
    assert names[-len(services.RUN_EXTRA) :] == [n for n, _ in services.RUN_EXTRA]
    assert not [n for n in names if n.startswith("answer.")]
    row = rows[0]
    assert (row["comment_count"], row["answer_count"], row["answers"]) == (
        "0",
        "0",
        "[]",
    )
    assert row["review_state"] == row["decided_at"] == row["review_seconds"] == ""


# ------------------------------------------------------------------ file names


def test_each_format_and_the_excel_variant_have_distinct_file_names(
    client, viewer, world
):
    run = world["run"]
    run.name = 'Q3 "nightly" run/../Zürich\r\nX-Evil: 1'
    run.save()
    login(client, viewer)
    names = {}
    for label, url in (
        ("csv", _url(run)),
        ("excel", _url(run) + "?excel=1"),
        ("jsonl", _url(run, "jsonl")),
        ("parquet", _url(run, "parquet")),
        ("filtered", _url(run) + "?final=fail"),
        ("filtered excel", _url(run) + "?final=fail&excel=1"),
    ):
        response = client.get(url)
        _body(response)
        disposition = response["Content-Disposition"]
        match = re.fullmatch(r'attachment; filename="([a-z0-9.-]+)"', disposition)
        assert match, disposition
        names[label] = match.group(1)
    stem = f"q3-nightly-runzurich-x-evil-1-run-{run.pk}"
    assert names == {
        "csv": f"{stem}.csv",
        "excel": f"{stem}-excel.csv",
        "jsonl": f"{stem}.jsonl",
        "parquet": f"{stem}.parquet",
        "filtered": f"{stem}-filtered.csv",
        "filtered excel": f"{stem}-filtered-excel.csv",
    }
    api = client.get(f"/api/runs/{run.pk}/export.csv?excel=1", **bearer(viewer))
    _body(api)
    assert api["Content-Disposition"] == f'attachment; filename="{stem}-excel.csv"'


def test_an_unnamed_run_and_a_dataset_get_plain_names(client, viewer, world):
    run = world["run"]
    assert run.name == ""
    login(client, viewer)
    response = client.get(_url(run) + "?excel=1")
    _body(response)
    assert response["Content-Disposition"] == (
        f'attachment; filename="run-{run.pk}-excel.csv"'
    )
    dataset = run.dataset
    url = reverse("exports:dataset_csv", args=[run.project_id, dataset.pk])
    plain, excel = client.get(url), client.get(url + "?excel=1")
    _body(plain), _body(excel)
    assert plain["Content-Disposition"] == (
        f'attachment; filename="qa-dataset-{dataset.pk}.csv"'
    )
    assert excel["Content-Disposition"] == (
        f'attachment; filename="qa-dataset-{dataset.pk}-excel.csv"'
    )


# ------------------------------------------------------------------ query count


def _annotated_run(project, owner, reviewer, n_items: int):
    """A run whose every result has comments, an override note, a judge call and an
    answer in a single-review queue: what the export reads per chunk."""
    run = make_run(project, n_items=n_items)
    queue = queue_create(run=run, user=owner, query=ResultQuery(sort="item"), name="q")
    for entry in QueueEntry.objects.filter(queue=queue).select_related("result"):
        result = entry.result
        CommentFactory(result=result, user=owner)
        CommentFactory(result=result, user=reviewer)
        OverrideFactory(result=result, kind="score", new_value=0.1, note="n")
        JudgeCallFactory(result=result, prompt_tokens=10, completion_tokens=2)
        Result.objects.filter(pk=result.pk).update(reviewed=True, reviewed_by=reviewer)
    return run


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_query_count_is_constant_per_chunk_not_per_result(
    client, owner, reviewer, project, fmt, monkeypatch
):
    monkeypatch.setattr(services, "CHUNK_SIZE", 10)
    runs = {n: _annotated_run(project, owner, reviewer, n) for n in (10, 20, 40)}
    login(client, owner)
    counts = {}
    for n, run in runs.items():
        with CaptureQueriesContext(connection) as ctx:
            body = _body(client.get(_url(run, fmt)))
        assert body
        counts[n] = len(ctx.captured_queries)
    per_chunk = counts[20] - counts[10]
    # One more chunk of 10 costs the same few queries (notes, names, comments,
    # entries, reviews, usage), whatever the chunk holds: never one per result.
    assert 0 < per_chunk <= 6, counts
    assert counts[40] - counts[20] == 2 * per_chunk, counts


def test_a_run_without_additions_costs_no_query_per_chunk(
    client, owner, project, monkeypatch
):
    monkeypatch.setattr(services, "CHUNK_SIZE", 10)
    login(client, owner)
    counts = []
    for n in (10, 40):
        run = make_run(project, n_items=n)
        with CaptureQueriesContext(connection) as ctx:
            assert len(_csv_rows(client.get(_url(run)))) == n
        counts.append(len(ctx.captured_queries))
    # No comments, notes, queue answers or judge calls anywhere in the run: one
    # query said so, and no chunk asks again.
    assert counts[0] == counts[1], counts


def test_json_cells_that_are_bare_scalars_are_neutralised_in_csv():
    # Agent data and options are arrays or objects; anything else is text to a
    # spreadsheet and gets the one rule.
    assert services._json_cell([{"a": "=1"}]) == '[{"a": "=1"}]'
    assert services._json_cell(-1) == "'-1"
    assert services._json_cell("=cmd") == '"=cmd"'
    assert services._json_cell(None) == ""


def test_cost_is_priced_as_the_run_started_not_at_the_current_price(
    client, owner, project, world
):
    """run_start records the judge's price in the run's snapshot; a later price
    change (or a deleted connection) leaves that run's cost alone."""
    from evalsite.evals.runs.services import _judge_snapshot

    run, judge, run_scorer = world["run"], world["judge"], world["run_scorer"]
    run_scorer.scorer.judge = judge
    run_scorer.judge_snapshot = _judge_snapshot(run_scorer.scorer)
    run_scorer.save()
    assert run_scorer.judge_snapshot["price_per_1k_input"] == "0.15"
    login(client, owner)
    before = _by_index(_csv_rows(client.get(_url(run))))["0"]["cost"]
    judge.price_per_1k_input, judge.price_per_1k_output = Decimal("15"), Decimal("60")
    judge.save()
    assert _by_index(_csv_rows(client.get(_url(run))))["0"]["cost"] == before
    run_scorer.judge = None
    run_scorer.save()
    assert _by_index(_csv_rows(client.get(_url(run))))["0"]["cost"] == before
    assert float(before) > 0
    # A judge without a price then has none now either.
    run_scorer.judge_snapshot = {
        **run_scorer.judge_snapshot,
        "price_per_1k_input": None,
        "price_per_1k_output": None,
    }
    run_scorer.save()
    assert _by_index(_csv_rows(client.get(_url(run))))["0"]["cost"] == ""
